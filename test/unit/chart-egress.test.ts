// The egress proxy in the chart (docs/chart.md, "Egress"): with it on, runner Pods reach only DNS, the
// API server, the relay and the proxy; the proxy's Deployment, Service, RBAC, key and lists; what the
// schema and the templates refuse. Without it, the chart is as it was.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { HOST_ENTRY_PATTERN, parseHostEntry } from '../../common/egress/hosts.ts';
import { loadConfig } from '../../controller/config.ts';
import { DEFAULT_BLOCKED_CIDRS } from '../../egress/cidrs.ts';
import { EGRESS_ENV, loadConfig as loadEgressConfig } from '../../egress/config.ts';
import {
  CHART_DIR,
  HELM_SETUP_TIMEOUT,
  controllerData,
  find,
  helmBin,
  podTemplate,
  render,
  renderError,
  type KubeObject,
} from './chart-render.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

type Rule = { to?: object[]; from?: object[]; ports?: object[] };
type Policy = { spec: { podSelector: object; policyTypes: string[]; ingress: Rule[]; egress: Rule[] } };
const policy = (objects: KubeObject[], name: string) => find(objects, 'NetworkPolicy', name) as unknown as Policy;
const dataOf = (objects: KubeObject[], name: string) =>
  (find(objects, 'ConfigMap', name) as unknown as { data: Record<string, string> }).data;
const RELEASE = { release: 'tether', namespace: 'agents' };

const DNS_RULE = {
  to: [
    {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
      podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
    },
  ],
  ports: [
    { protocol: 'UDP', port: 53 },
    { protocol: 'TCP', port: 53 },
  ],
};
const API_SERVER_RULE = {
  to: [{ ipBlock: { cidr: '203.0.113.10/32' } }],
  ports: [{ protocol: 'TCP', port: 443 }],
};
const selector = (component: string) => ({
  'app.kubernetes.io/name': 'tether',
  'app.kubernetes.io/instance': 'tether',
  'app.kubernetes.io/component': component,
});
const inRelease = (component: string, port: number) => ({
  to: [
    {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'agents' } },
      podSelector: { matchLabels: selector(component) },
    },
  ],
  ports: [{ protocol: 'TCP', port }],
});
const apiServer = { networkPolicy: { apiServer: { cidrs: ['203.0.113.10/32'], ports: [443] } } };

describe('NetworkPolicies with the egress proxy on (the default)', () => {
  let objects: KubeObject[];
  beforeAll(async () => {
    objects = await render(apiServer, RELEASE);
  });

  it('lets runner Pods reach the API server, the relay and the egress proxy Pods, and nothing else: no DNS', () => {
    const runner = policy(objects, 'tether-runner');
    expect(runner.spec.ingress).toEqual([]);
    expect(runner.spec.egress).toEqual([API_SERVER_RULE, inRelease('relay', 8080), inRelease('egress', 3128)]);
  });

  it('without the API server addresses (helm template), refuses to render, naming the value', async () => {
    const message = await renderError({ networkPolicy: { apiServer: { cidrs: [] } } }, RELEASE);
    expect(message).toContain('networkPolicy.apiServer.cidrs is required');
    expect(message).toContain('could not be looked up');
  });

  it('with egress off, keeps cluster DNS and the API server ports to any address when none is known', async () => {
    const values = { egress: { enabled: false }, networkPolicy: { apiServer: { cidrs: [] } } };
    const runner = policy(await render(values, RELEASE), 'tether-runner');
    expect(runner.spec.egress.slice(0, 2)).toEqual([
      DNS_RULE,
      { to: [{ ipBlock: { cidr: '0.0.0.0/0' } }], ports: [443, 6443].map((port) => ({ protocol: 'TCP', port })) },
    ]);
  });

  it('gives the proxy ingress from runner Pods only, egress to DNS, the API server and the internet outside \
egress.blockedCidrs', () => {
    const egress = policy(objects, 'tether-egress');
    expect(egress.spec.podSelector).toEqual({ matchLabels: selector('egress') });
    expect(egress.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(egress.spec.ingress).toEqual([
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'agents-runners' } },
            podSelector: {
              matchLabels: { 'app.kubernetes.io/component': 'runner', 'app.kubernetes.io/part-of': 'tether' },
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 3128 }],
      },
    ]);
    expect(egress.spec.egress).toEqual([
      DNS_RULE,
      API_SERVER_RULE,
      {
        to: [
          {
            ipBlock: {
              cidr: '0.0.0.0/0',
              // The proxy's own default ranges, IPv4 (egress/cidrs.ts).
              except: DEFAULT_BLOCKED_CIDRS.filter((cidr) => !cidr.includes(':')),
            },
          },
        ],
      },
    ]);
  });

  it("adds the install's peers and rules (egress.ingressFrom, egress.extraEgress) and keeps networkPolicy.extraEgress \
for runners", async () => {
    const peer = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } };
    const git = { to: [{ ipBlock: { cidr: '10.1.2.3/32' } }], ports: [{ protocol: 'TCP', port: 443 }] };
    const more = await render(
      { ...apiServer, egress: { ingressFrom: [peer], extraEgress: [git] }, networkPolicy: { extraEgress: [git] } },
      RELEASE,
    );
    expect(policy(more, 'tether-egress').spec.ingress[0]!.from).toContainEqual(peer);
    expect(policy(more, 'tether-egress').spec.egress.at(-1)).toEqual(git);
    expect(policy(more, 'tether-runner').spec.egress.at(-1)).toEqual(git);
  });
});

describe('the egress proxy objects', () => {
  let objects: KubeObject[];
  beforeAll(async () => {
    objects = await render({}, RELEASE);
  });

  it("runs node /app/egress/main.ts from the controller's image, its ConfigMap and key, the Pod \
Security restricted", () => {
    const template = podTemplate(find(objects, 'Deployment', 'tether-egress'));
    const controller = podTemplate(find(objects, 'Deployment', 'tether-controller'));
    const [container] = template.spec.containers as unknown as Array<Record<string, unknown>>;
    expect(container).toMatchObject({
      name: 'egress',
      image: (controller.spec.containers[0] as unknown as { image: string }).image,
      command: ['node', '/app/egress/main.ts'],
      ports: [{ name: 'proxy', containerPort: 3128 }],
      envFrom: [{ configMapRef: { name: 'tether-egress' } }],
      env: [
        { name: 'TETHER_EGRESS_KEY', valueFrom: { secretKeyRef: { name: 'tether-egress', key: 'TETHER_EGRESS_KEY' } } },
      ],
      securityContext: {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      },
    });
    expect(template.spec).toMatchObject({
      serviceAccountName: 'tether-egress',
      securityContext: { runAsNonRoot: true },
    });
    const service = find(objects, 'Service', 'tether-egress') as unknown as { spec: object };
    expect(service.spec).toEqual({
      type: 'ClusterIP',
      selector: selector('egress'),
      ports: [{ name: 'proxy', port: 3128, targetPort: 'proxy', protocol: 'TCP' }],
    });
  });

  it("names only variables egress/config.ts reads, and the proxy accepts them with the Secret's key", () => {
    const data = dataOf(objects, 'tether-egress');
    const known = new Set(Object.keys(EGRESS_ENV.properties));
    expect(Object.keys(data).filter((name) => !known.has(name))).toEqual([]);
    const config = loadEgressConfig({ ...data, TETHER_EGRESS_KEY: 'e'.repeat(48) });
    expect(config).toMatchObject({
      port: 3128,
      namespace: 'agents',
      runnerNamespace: 'agents-runners',
      grantsConfigMap: 'tether-egress-grants',
    });
    expect(config.rules.allow).toEqual([
      { host: 'registry.npmjs.org', wildcard: false },
      { host: 'registry.yarnpkg.com', wildcard: false },
    ]);
    expect(config.rules.blocked.has('10.1.2.3')).toBe(true);
  });

  it("blocks by default the ranges the proxy's code blocks by default", () => {
    expect(dataOf(objects, 'tether-egress').TETHER_EGRESS_BLOCKED_CIDRS).toBe(DEFAULT_BLOCKED_CIDRS.join(','));
  });

  it('reads Sessions and writes only its grants ConfigMap (by name), nothing else', () => {
    const role = find(objects, 'Role', 'tether-egress') as unknown as {
      metadata: { namespace: string };
      rules: object[];
    };
    expect(role.metadata.namespace).toBe('agents');
    expect(role.rules).toEqual([
      { apiGroups: ['tether.dev'], resources: ['sessions'], verbs: ['get', 'list', 'watch'] },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['tether-egress-grants'],
        verbs: ['get', 'list', 'watch', 'update'],
      },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
    ]);
    const createOnly = find(objects, 'ValidatingAdmissionPolicy', 'agents-tether-egress') as unknown as {
      spec: { validations: { expression: string }[] };
    };
    expect(createOnly.spec.validations.map((v) => v.expression)).toEqual([
      "object.metadata.name == 'tether-egress-grants' && request.namespace == 'agents'",
    ]);
    const grants = find(objects, 'ConfigMap', 'tether-egress-grants');
    expect(grants).not.toHaveProperty('data');
    const binding = find(objects, 'RoleBinding', 'tether-egress') as unknown as { subjects: object[] };
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'tether-egress', namespace: 'agents' }]);
  });

  it("gives the controller the Service's URL and the same key; the controller accepts them", () => {
    const env = podTemplate(find(objects, 'Deployment', 'tether-controller')).spec.containers[0]!.env!;
    expect(env).toContainEqual({
      name: 'TETHER_EGRESS_KEY',
      valueFrom: { secretKeyRef: { name: 'tether-egress', key: 'TETHER_EGRESS_KEY' } },
    });
    expect(loadConfig(controllerData(objects)).egress?.url).toBe('http://tether-egress.agents.svc:3128');
  });

  it('generates a 48-character key, or takes the given one or an existing Secret; both Deployments \
restart with a new one', async () => {
    const keyOf = (o: KubeObject[]) =>
      (find(o, 'Secret', 'tether-egress') as unknown as { stringData: Record<string, string> }).stringData
        .TETHER_EGRESS_KEY;
    const checksums = (o: KubeObject[]) =>
      ['tether-controller', 'tether-egress'].map(
        (d) => podTemplate(find(o, 'Deployment', d)).metadata.annotations?.['checksum/egress-key'],
      );
    expect(keyOf(objects)).toMatch(/^[A-Za-z0-9]{48}$/);
    const given = await render({ secrets: { egress: { key: 'g'.repeat(40) } } }, RELEASE);
    const other = await render({ secrets: { egress: { key: 'h'.repeat(40) } } }, RELEASE);
    expect(keyOf(given)).toBe('g'.repeat(40));
    const [controller, egress] = checksums(given);
    expect(controller).toMatch(/^[0-9a-f]{64}$/);
    expect(egress).toBe(controller);
    expect(checksums(other)[0]).not.toBe(controller);
    const existing = await render({ secrets: { egress: { existingSecret: 'my-egress' } } }, RELEASE);
    expect(existing.filter((o) => o.kind === 'Secret' && o.metadata.name.includes('egress'))).toEqual([]);
    expect(JSON.stringify(podTemplate(find(existing, 'Deployment', 'tether-egress')))).toContain('"my-egress"');
  });

  it("lists the default allowlist, the supervisor's forge, GitHub API and model hosts, the forge hosts", async () => {
    const data = dataOf(objects, 'tether-egress');
    expect(data).toMatchObject({
      TETHER_NAMESPACE: 'agents',
      TETHER_RUNNER_NAMESPACE: 'agents-runners',
      TETHER_EGRESS_PORT: '3128',
      TETHER_EGRESS_LISTEN: '0.0.0.0',
      TETHER_EGRESS_ALLOW: 'registry.npmjs.org,registry.yarnpkg.com',
      TETHER_EGRESS_DENY: '',
      TETHER_EGRESS_SUPERVISOR_ALLOW: 'github.com,api.github.com,api.anthropic.com',
      TETHER_EGRESS_REPOSITORIES: '{}',
      TETHER_EGRESS_ASK: 'true',
      TETHER_EGRESS_ASK_WAIT: '60s',
      TETHER_EGRESS_GRANTS: 'tether-egress-grants',
      TETHER_REPO_HOSTS: 'github.com',
    });
    const custom = dataOf(
      await render(
        {
          relay: {
            repo: { url: 'https://GitHub.com/acme/web.git' },
            repositories: [
              { name: 'api', url: 'https://git.acme.example:8443/acme/api.git' },
              { name: 'local', url: '/srv/git/local.git' },
            ],
          },
          runner: { githubApiUrl: 'https://ghe.acme.example/api/v3', anthropicBaseUrl: 'https://llm.acme.example/v1' },
          egress: {
            allow: ['pypi.org', '*.pythonhosted.org'],
            deny: ['evil.example'],
            repositories: { 'https://github.com/acme/web.git': ['crates.io', '[2001:db8::1]:8080'] },
            ask: false,
            askWait: '2m',
            blockedCidrs: [],
          },
        },
        RELEASE,
      ),
      'tether-egress',
    );
    expect(custom).toMatchObject({
      TETHER_EGRESS_ALLOW: 'pypi.org,*.pythonhosted.org',
      TETHER_EGRESS_DENY: 'evil.example',
      TETHER_EGRESS_SUPERVISOR_ALLOW: 'github.com,git.acme.example:8443,ghe.acme.example,llm.acme.example',
      TETHER_EGRESS_REPOSITORIES: JSON.stringify({
        'https://github.com/acme/web.git': ['crates.io', '[2001:db8::1]:8080'],
      }),
      TETHER_EGRESS_ASK: 'false',
      TETHER_EGRESS_ASK_WAIT: '2m',
      TETHER_EGRESS_BLOCKED_CIDRS: 'none',
    });
  });
});

describe('egress values', () => {
  it("checks entries with the code's HOST_ENTRY_PATTERN, and its default list is entries of the \
runner image's registries", () => {
    const schema = JSON.parse(readFileSync(`${CHART_DIR}/values.schema.json`, 'utf8')) as {
      properties: {
        egress: {
          properties: Record<
            string,
            { items?: { pattern: string }; additionalProperties?: { items: { pattern: string } } }
          >;
        };
      };
    };
    const egress = schema.properties.egress.properties;
    expect(egress.allow!.items!.pattern).toBe(HOST_ENTRY_PATTERN);
    expect(egress.deny!.items!.pattern).toBe(HOST_ENTRY_PATTERN);
    expect(egress.repositories!.additionalProperties!.items.pattern).toBe(HOST_ENTRY_PATTERN);
    const values = readFileSync(`${CHART_DIR}/values.yaml`, 'utf8');
    const allow = /\n {2}allow:\n((?: {4}- .*\n)+)/
      .exec(values)![1]!
      .match(/- (.*)/g)!
      .map((l) => l.slice(2));
    expect(allow).toEqual(['registry.npmjs.org', 'registry.yarnpkg.com']);
    for (const entry of allow) expect(parseHostEntry(entry).wildcard).toBe(false);
  });

  it.each([
    [{ egress: { allow: ['https://pypi.org'] } }, '/egress/allow/0'],
    [{ egress: { allow: ['PyPI.org'] } }, '/egress/allow/0'],
    [{ egress: { allow: ['pypi.org/simple'] } }, '/egress/allow/0'],
    [{ egress: { deny: ['*'] } }, '/egress/deny/0'],
    [{ egress: { repositories: { 'https://github.com/acme/web.git': 'pypi.org' } } }, '/egress/repositories'],
    [{ egress: { repositories: { 'https://github.com/acme/web.git': ['pypi.org:port'] } } }, '/egress/repositories'],
    [{ egress: { askWait: '1 minute' } }, '/egress/askWait'],
    [{ egress: { blockedCidrs: ['10.0.0.0'] } }, '/egress/blockedCidrs/0'],
    [{ egress: { port: 80 } }, '/egress/port'],
    [{ egress: { replicas: 2 } }, 'replicas'],
    [{ secrets: { egress: { key: 'short' } } }, '/secrets/egress/key'],
  ])('schema: %j names %s', async (values, path) => {
    const message = await renderError(values);
    expect(message).toContain("values don't meet the specifications of the schema");
    expect(message).toContain(path);
  });

  it('refuses an operator proxy (runner.proxy) with the egress proxy on, and takes it with egress off', async () => {
    const proxy = { runner: { proxy: { httpsProxy: 'http://proxy.example:3128' } } };
    expect(await renderError(proxy)).toMatch(/runner.proxy is set while egress.enabled=true.*egress.enabled=false/);
    expect(await renderError({ egress: { podLabels: { 'app.kubernetes.io/component': 'x' } } })).toMatch(
      /egress.podLabels.*Tether's own/,
    );
    const objects = await render({ ...proxy, egress: { enabled: false } }, RELEASE);
    expect(dataOf(objects, 'tether-controller').TETHER_RUNNER_HTTPS_PROXY).toBe('http://proxy.example:3128');
  });

  it('with egress.enabled=false renders no egress object and gives the controller none of it', async () => {
    const objects = await render({ egress: { enabled: false } }, RELEASE);
    expect(objects.filter((o) => o.metadata.name.includes('egress')).map((o) => o.kind)).toEqual([]);
    const controller = podTemplate(find(objects, 'Deployment', 'tether-controller'));
    expect(JSON.stringify(controller)).not.toContain('EGRESS');
    expect(dataOf(objects, 'tether-controller')).not.toHaveProperty('TETHER_EGRESS_URL');
    expect(loadConfig(controllerData(objects)).egress).toBeUndefined();
  });
});
