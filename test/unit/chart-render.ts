// Renders charts/tether with the real helm binary (scripts/ensure-helm.sh) for the chart tests.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

const run = promisify(execFile);

export const CHART_DIR = 'charts/tether';
/** The first call may build helm (minutes on a fresh machine); give beforeAll this much. */
export const HELM_SETUP_TIMEOUT = 900_000;

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

let helmPath: string | undefined;
export function helmBin(): string {
  helmPath ??= execFileSync('scripts/ensure-helm.sh', {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  return helmPath;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function helm(args: string[], env: Record<string, string> = {}): Promise<HelmResult> {
  try {
    const { stdout, stderr } = await run(helmBin(), args, {
      env: { ...process.env, ...env },
      maxBuffer: 32 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(error) };
  }
}

/** Runs `fn` with a values file holding `values` (JSON is valid YAML). */
export async function withValuesFile<T>(values: object, fn: (file: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'tether-values-'));
  const file = join(dir, 'values.yaml');
  writeFileSync(file, JSON.stringify(values));
  try {
    return await fn(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The API server's address a `helm install` reads from the cluster (the `kubernetes` EndpointSlice);
 * `helm template` reads none, and with egress on the chart then requires networkPolicy.apiServer.cidrs.
 */
export const TEST_API_SERVER_CIDRS = ['192.0.2.10/32'];
/**
 * The values every install must give (relay.publicUrl has no default; the API server's addresses,
 * which helm template cannot look up); the tests' values go on top.
 */
export const REQUIRED_VALUES = {
  relay: { publicUrl: 'https://tether.example.com' },
  networkPolicy: { apiServer: { cidrs: TEST_API_SERVER_CIDRS } },
};

/** Runs `fn` with `-f` arguments: REQUIRED_VALUES (unless bare), then `values` over them. */
export async function withValueArgs<T>(values: object, fn: (args: string[]) => Promise<T>, bare = false): Promise<T> {
  if (bare) return withValuesFile(values, (file) => fn(['-f', file]));
  return withValuesFile(REQUIRED_VALUES, (required) =>
    withValuesFile(values, (file) => fn(['-f', required, '-f', file])),
  );
}

export interface RenderOptions {
  release?: string;
  namespace?: string;
  includeCrds?: boolean;
  extraArgs?: string[];
  /** Leave out REQUIRED_VALUES (to see what the chart says without them). */
  bare?: boolean;
}

/** `helm template` → the rendered YAML text; throws with helm's message when rendering fails. */
export async function renderText(values: object = {}, options: RenderOptions = {}): Promise<string> {
  const { release = 'tether', namespace = 'tether' } = options;
  return withValueArgs(
    values,
    async (valueArgs) => {
      const args = [
        'template',
        release,
        CHART_DIR,
        '--namespace',
        namespace,
        ...valueArgs,
        ...(options.includeCrds ? ['--include-crds'] : []),
        ...(options.extraArgs ?? []),
      ];
      const result = await helm(args);
      if (result.code !== 0) throw new Error(result.stderr.trim());
      return result.stdout;
    },
    options.bare,
  );
}

export function parseObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length) throw new Error(`rendered YAML does not parse: ${doc.errors[0]!.message}`);
      return doc.toJS() as KubeObject | null;
    })
    .filter((o): o is KubeObject => o !== null);
}

export async function render(values: object = {}, options: RenderOptions = {}): Promise<KubeObject[]> {
  return parseObjects(await renderText(values, options));
}

/** The rendering error message for values that must be refused. */
export async function renderError(values: object, options: RenderOptions = {}): Promise<string> {
  return renderText(values, options).then(
    () => {
      throw new Error(`helm rendered values it should refuse: ${JSON.stringify(values)}`);
    },
    (error: Error) => error.message,
  );
}

export function find(objects: KubeObject[], kind: string, nameSuffix: string): KubeObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name.endsWith(nameSuffix));
  if (!found)
    throw new Error(
      `no ${kind} named *${nameSuffix} in [${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}]`,
    );
  return found;
}

/** The tests' egress key, standing for the one the chart's egress Secret gives the controller. */
export const TEST_EGRESS_KEY = 'test-egress-key-0123456789abcdef-0123';

/** The controller's ConfigMap with the keys its Secrets give it: the phone hash key, the egress key with egress on. */
export function controllerData(objects: KubeObject[]): Record<string, string> {
  const data = (find(objects, 'ConfigMap', '-controller') as unknown as { data: Record<string, string> }).data;
  const egressKey: Record<string, string> = data.TETHER_EGRESS_URL ? { TETHER_EGRESS_KEY: TEST_EGRESS_KEY } : {};
  return { ...data, TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY, ...egressKey };
}

type PodSpec = {
  containers: {
    name: string;
    env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
    envFrom?: { configMapRef?: { name: string } }[];
  }[];
} & Record<string, unknown>;
export interface PodTemplate {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: PodSpec;
}

export const podTemplate = (deployment: KubeObject) =>
  (deployment as unknown as { spec: { template: PodTemplate } }).spec.template;

/** Values that switch on every optional part of the chart. */
export const everythingOn = {
  image: { registry: 'registry.example.com/tether', tag: '1.2.3', pullPolicy: 'Always' },
  imagePullSecrets: [{ name: 'regcred' }],
  secrets: {
    twilio: { existingSecret: 'my-twilio', accountSidKey: 'sid', authTokenKey: 'token' },
    runner: { existingSecret: 'my-runner' },
    relay: { existingSecret: 'my-relay' },
    egress: { existingSecret: 'my-egress' },
  },
  sessions: { timeouts: { run: '2h', approval: '45m' }, maxQueued: 3, creators: { groups: ['tether-operators'] } },
  controller: {
    replicas: 2,
    concurrency: 4,
    logLevel: 'debug',
    podTTL: '1h',
    historyPerPhone: 50,
    repositoryHosts: ['github.example.com'],
  },
  runner: {
    runtimeClass: { name: 'gvisor', create: true, handler: 'runsc' },
    permissionPolicy: { deny: ['Bash(git push*)', 'WebFetch'], ask: ['Bash(npm install*)'] },
    workspace: { size: '20Gi', storageClassName: 'fast-ssd' },
    githubApiUrl: 'https://github.example.com/api/v3',
  },
  relay: {
    replicas: 2,
    inboundConcurrency: 32,
    publicUrl: 'https://wa.example.org/tether',
    allowedNumbers: ['+14155550123', '+447700900123'],
    repo: { url: 'https://github.com/acme/web.git', baseBranch: 'develop', name: 'web' },
    repositories: [{ name: 'api', url: 'https://git.acme.example/acme/api.git', baseBranch: 'main' }],
    twilio: {
      whatsappFrom: 'whatsapp:+14155238886',
      apiUrl: 'https://api.twilio.com',
      templateSid: `HX${'a'.repeat(32)}`,
    },
    webChat: { enabled: true },
    media: { persistence: { enabled: true, accessMode: 'ReadWriteMany', storageClassName: 'nfs' } },
    service: { type: 'LoadBalancer', port: 8443 },
    ingress: {
      enabled: true,
      className: 'nginx',
      host: 'wa.example.org',
      tlsSecretName: 'wa-tls',
      annotations: { 'cert-manager.io/cluster-issuer': 'letsencrypt' },
    },
  },
  github: {
    app: { id: '123456', installationId: '7890123', existingSecret: 'my-github-app' },
    webhookSecret: { existingSecret: 'my-github-webhook' },
    merge: 'whenGreen',
    poll: { seconds: 120, maxPullRequests: 20 },
  },
  people: [
    {
      phone: '+14155550123',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      github: 'ada',
      repos: ['web'],
      merge: true,
    },
  ],
  networkPolicy: {
    apiServer: { cidrs: ['203.0.113.10/32'], ports: [443] },
    ipv6: { enabled: true },
    dns: { cidrs: ['169.254.20.10/32'] },
  },
  metrics: {
    serviceMonitor: { enabled: true, labels: { release: 'prometheus' } },
    dashboard: { namespace: 'monitoring', labels: { team: 'dev' } },
  },
};
