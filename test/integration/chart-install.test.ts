// charts/tether on the real local control plane: helm install/upgrade for real, the fully
// switched-on chart through a server-side dry run and then for real, and every Pod it (or the
// controller) makes accepted under Pod Security `restricted` without a warning.
import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { loadConfig as loadControllerConfig } from '../../controller/config.ts';
import { sessionName, workspaceName } from '../../common/session/names.ts';
import { API_VERSION, KIND, type Session } from '../../common/session/schema.ts';
import { adminKubeConfig, deleteNamespace, installSessionCrd } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import {
  TEST_API_SERVER_CIDRS,
  everythingOn,
  find,
  helmBin,
  podTemplate,
  render,
  type KubeObject,
} from '../unit/chart-render.ts';
import {
  deleteClusterScoped,
  helmRelease,
  installedControllerEnv,
  kubectlOk,
  kubectlResult,
  manifestFile,
  restrictedNamespace,
} from './chart-cluster.ts';

let kc: KubeConfig;
let installed: string;
let applied: string;
let notes: string;
// The suite's Session CRD is shared: this release leaves it alone (chart-crd-upgrade.test.ts has its own plane).
const full = (ns: string) => ({
  ...everythingOn,
  crds: { install: false },
  metrics: { ...everythingOn.metrics, dashboard: { namespace: ns } },
});
const json = async <T>(args: string[]) => JSON.parse((await kubectlOk([...args, '-o', 'json'])).stdout) as T;

beforeAll(async () => {
  helmBin();
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  [installed, applied] = await Promise.all([restrictedNamespace(kc, 'chart'), restrictedNamespace(kc, 'chart-full')]);
  notes = (await helmRelease('install', 'tether', installed, { relay: { allowedNumbers: ['+14155550123'] } })).stdout;
}, 900_000);
afterAll(async () => {
  await deleteClusterScoped([installed, applied]);
  await kubectlResult(['delete', 'runtimeclass', 'gvisor', '--ignore-not-found']);
  await Promise.all([installed, applied].flatMap((n) => [deleteNamespace(kc, n), deleteNamespace(kc, `${n}-runners`)]));
});

/** A Deployment's (or hook's) Pod template as a Pod, for a Pod Security check. */
function asPod(namespace: string, name: string, source: KubeObject): object {
  const template =
    source.kind === 'Pod' ? (source as unknown as { metadata: { labels: object }; spec: object }) : podTemplate(source);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: template.metadata.labels },
    spec: template.spec,
  };
}

/** Creates the Pods with a server-side dry run; returns kubectl's output (warnings included). */
async function dryRunPods(pods: object[], as?: string) {
  return kubectlResult(['create', '--dry-run=server', '-f', manifestFile(pods), ...(as ? [`--as=${as}`] : [])]);
}

describe('helm install with default values', () => {
  it('tells the user the webhook URL for Twilio, how to list Sessions and how to reach the web chat', () => {
    expect(notes).toContain('https://tether.example.com/webhook');
    expect(notes).toContain(`kubectl get sessions -n ${installed}`);
    expect(notes).toContain('relay runs with the web chat only');
    expect(notes).toContain(`get secret tether-relay -o jsonpath='{.data.RELAY_WEB_CHAT_TOKEN}'`);
  });

  it("creates the objects, and the Deployments' Pods pass Pod Security restricted", async () => {
    const deployments = await json<{ items: { metadata: { name: string } }[] }>([
      'get',
      'deployments',
      '-n',
      installed,
    ]);
    expect(deployments.items.map((d) => d.metadata.name).sort()).toEqual([
      'tether-controller',
      'tether-egress',
      'tether-relay',
    ]);
    // kube-controller-manager's ReplicaSet controller creates the Pods; `restricted` would refuse them.
    const pods = await eventually(
      async () => {
        const list = await json<{ items: { metadata: { labels: Record<string, string> } }[] }>([
          'get',
          'pods',
          '-n',
          installed,
        ]);
        const components = list.items.map((p) => p.metadata.labels['app.kubernetes.io/component']).sort();
        expect(components).toEqual(['controller', 'egress', 'relay']);
        return components;
      },
      30_000,
      250,
    );
    expect(pods).toHaveLength(3);
    const events = (
      await kubectlOk(['get', 'events', '-n', installed, '--field-selector', 'reason=FailedCreate', '-o', 'name'])
    ).stdout;
    expect(events.trim()).toBe('');
  });

  it("lets runners reach the API server's addresses: given, else those it finds, else the install stops", async () => {
    const apiRule = async () =>
      (
        await json<{ spec: { egress: { to: unknown[]; ports: unknown[] }[] } }>([
          'get',
          'networkpolicy',
          'tether-runner',
          '-n',
          `${installed}-runners`,
        ])
      ).spec.egress[0]!;
    const numbers = { relay: { allowedNumbers: ['+14155550123'] } };
    // Installed with the tests' networkPolicy.apiServer.cidrs (REQUIRED_VALUES): those.
    expect(await apiRule()).toEqual({
      to: TEST_API_SERVER_CIDRS.map((cidr) => ({ ipBlock: { cidr } })),
      ports: [
        { protocol: 'TCP', port: 443 },
        { protocol: 'TCP', port: 6443 },
      ],
    });
    // This control plane advertises 127.0.0.1, which the API server never publishes as an endpoint: with
    // none given and none found, the upgrade stops (egress is on) and the release keeps its rule.
    expect(await kubectlResult(['get', 'endpointslice', 'kubernetes', '-n', 'default'])).toMatchObject({ code: 1 });
    const unknown = { ...numbers, networkPolicy: { apiServer: { cidrs: [] } } };
    await expect(helmRelease('upgrade', 'tether', installed, unknown)).rejects.toThrow(
      /networkPolicy.apiServer.cidrs is required here: the API server's addresses could not be looked up/,
    );
    expect((await apiRule()).to).toEqual(TEST_API_SERVER_CIDRS.map((cidr) => ({ ipBlock: { cidr } })));
    // What a real cluster publishes for the `kubernetes` Service; the chart reads it at install/upgrade time.
    const slice = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      addressType: 'IPv4',
      metadata: { name: 'kubernetes', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
      endpoints: [{ addresses: ['192.0.2.20'] }, { addresses: ['192.0.2.21'] }],
      ports: [{ name: 'https', port: 6443, protocol: 'TCP' }],
    };
    await kubectlOk(['create', '-f', manifestFile([slice])]);
    try {
      await helmRelease('upgrade', 'tether', installed, unknown);
      expect((await apiRule()).to).toEqual([
        { ipBlock: { cidr: '192.0.2.20/32' } },
        { ipBlock: { cidr: '192.0.2.21/32' } },
      ]);
    } finally {
      await kubectlOk(['delete', 'endpointslice', 'kubernetes', '-n', 'default']);
    }
  });

  it('keeps the generated media signing key, phone hash key and web chat token across helm upgrade', async () => {
    const read = async () =>
      (await json<{ data: Record<string, string> }>(['get', 'secret', 'tether-relay', '-n', installed])).data;
    const before = await read();
    expect(Buffer.from(before.RELAY_MEDIA_SIGNING_KEY!, 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(Buffer.from(before.TETHER_PHONE_HASH_KEY!, 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
    await helmRelease('upgrade', 'tether', installed, { relay: { allowedNumbers: ['+14155550123', '+14155550124'] } });
    expect(await read()).toEqual(before);
    const config = await json<{ data: Record<string, string> }>(['get', 'configmap', 'tether-relay', '-n', installed]);
    expect(config.data.ALLOWED_NUMBERS).toBe('+14155550123,+14155550124');
  });

  it('runs the helm test hook Pod under restricted (server-side dry run)', async () => {
    const objects = await render({}, { release: 'tether', namespace: installed });
    const result = await dryRunPods([asPod(installed, 'hook-check', find(objects, 'Pod', 'relay-test'))]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('refuses a Pod that is not restricted (the check is live)', async () => {
    const result = await dryRunPods([
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'loose', namespace: installed },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      },
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('violates PodSecurity "restricted:latest"');
  });
});

describe('runner Pod as the controller builds it', () => {
  it("is created by the controller's own ServiceAccount and passes restricted", async () => {
    const config = loadControllerConfig(await installedControllerEnv(installed));
    const phone = '+14155550123';
    const session: Session = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: sessionName(config.phoneHash(phone)), namespace: installed, uid: randomUUID() },
      spec: {
        phone,
        prompt: 'script: say: hi',
        repo: { url: 'https://github.com/acme/web.git', baseBranch: 'main' },
        workspace: workspaceName(config.phoneHash(phone)),
      },
    } as Session;
    const pod = desiredPod(session, config);
    expect(pod.spec?.containers[0]?.image).toBe('ghcr.io/tether-dev/tether-runner:0.1.0');
    // The Pod's ServiceAccount must exist for admission; the test creates it (RBAC: chart-rbac.test.ts).
    expect(pod.metadata?.namespace).toBe(`${installed}-runners`);
    await kubectlOk(['create', 'serviceaccount', pod.spec!.serviceAccountName!, '-n', pod.metadata!.namespace!]);
    const result = await dryRunPods([pod], `system:serviceaccount:${installed}:tether-controller`);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('every optional part on', () => {
  let objects: KubeObject[];
  let file: string;
  beforeAll(async () => {
    objects = await render(full(applied), { release: 'tether', namespace: applied });
    // No prometheus-operator here: ServiceMonitor shapes are checked in test/unit/chart-render.test.ts.
    // Hooks (the helm test Pod) are not part of an install; its template is checked below.
    file = manifestFile(
      objects.filter((o) => o.kind !== 'ServiceMonitor' && !o.metadata.annotations?.['helm.sh/hook']),
    );
    // A dry run creates nothing: the runner namespace the chart makes must exist for what goes in it.
    await kubectlOk(['create', 'namespace', `${applied}-runners`]);
  });

  it('passes a server-side dry run without warnings', async () => {
    const result = await kubectlResult([
      'apply',
      '--server-side',
      '--force-conflicts',
      '--dry-run=server',
      '--field-manager=chart-test',
      '-f',
      file,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('deployment.apps/tether-relay serverside-applied (server dry run)');
    expect(result.stdout).toContain('ingress.networking.k8s.io/tether-relay serverside-applied (server dry run)');
  });

  it('applies for real, and its Pod templates pass restricted', async () => {
    const result = await kubectlResult([
      'apply',
      '--server-side',
      '--force-conflicts',
      '--field-manager=chart-test',
      '-f',
      file,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const pods = [
      asPod(applied, 'controller-check', find(objects, 'Deployment', 'controller')),
      asPod(applied, 'relay-check', find(objects, 'Deployment', 'relay')),
      asPod(applied, 'egress-check', find(objects, 'Deployment', 'egress')),
      asPod(applied, 'hook-check', find(objects, 'Pod', 'relay-test')),
    ];
    const dryRun = await dryRunPods(pods);
    expect(dryRun.stderr).toBe('');
    expect(dryRun.code).toBe(0);
    await eventually(
      async () => {
        const list = await json<{ items: { metadata: { name: string; labels: Record<string, string> } }[] }>([
          'get',
          'pods',
          '-n',
          applied,
          '-l',
          'app.kubernetes.io/instance=tether',
        ]);
        expect(list.items.map((p) => p.metadata.labels['app.kubernetes.io/component']).sort()).toEqual([
          'controller',
          'controller',
          'egress',
          'relay',
          'relay',
        ]);
      },
      30_000,
      250,
    );
  });
});
