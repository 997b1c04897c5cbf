// The egress proxy's chart objects on the real API server (docs/chart.md, "Egress"): the key made
// once and kept across helm upgrade, the phone's grants kept too; the proxy's account reads Sessions
// and writes only its grants ConfigMap; the runner admission policy admits the controller's runner
// Pod with its egress variables, its own egress Secret mounted by the runner container, and no DNS
// (hostAliases from the Services its account reads), and refuses the egress credential as a value, its
// file or Secret anywhere but the runner container, DNS back, or a host name of its own; the controller
// writes only runner Pods' own egress Secrets; the proxy's account lists and watches runner Pods.
import type { KubeConfig, V1HostAlias, V1Pod, V1Service } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { loadConfig, type ControllerConfig } from '../../controller/config.ts';
import { desiredIdentity } from '../../controller/identity.ts';
import { NO_DNS_CONFIG, hostAliases } from '../../controller/runner-network.ts';
import { adminKubeConfig, createNamespace, deleteNamespace, installSessionCrd } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';
import { helmBin } from '../unit/chart-render.ts';
import {
  canI,
  createPodAsController,
  deleteClusterScoped,
  extraPermissions,
  helmRelease,
  installedControllerEnv,
  kubectlOk,
  kubectlResult,
  manifestFile,
  unstoredSession,
} from './chart-cluster.ts';

const EGRESS = 'tether-egress';
const CONTROLLER_USER = () => `system:serviceaccount:${ns}:tether-controller`;
const GRANTS = 'tether-egress-grants';
let kc: KubeConfig;
let ns: string;
let runners: string;
let config: ControllerConfig;
const values = { secrets: { relay: { phoneHashKey: TEST_PHONE_HASH_KEY } } };
const dataOf = async (kind: string, name: string) =>
  (
    JSON.parse((await kubectlOk(['get', kind, name, '-n', ns, '-o', 'json'])).stdout) as {
      data?: Record<string, string>;
    }
  ).data ?? {};

beforeAll(async () => {
  helmBin();
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  ns = await createNamespace(kc, 'egress');
  runners = `${ns}-runners`;
  await helmRelease('install', 'tether', ns, values);
  config = loadConfig(await installedControllerEnv(ns));
}, 900_000);
afterAll(async () => {
  await deleteClusterScoped([ns]);
  await Promise.all([deleteNamespace(kc, ns), deleteNamespace(kc, runners)]);
});

describe('the egress key and grants across helm upgrade', () => {
  it('makes the key once and keeps it, and the grants the proxy wrote, while the lists change', async () => {
    const before = await dataOf('secret', EGRESS);
    expect(Buffer.from(before.TETHER_EGRESS_KEY!, 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(config.egress).toMatchObject({
      url: `http://tether-egress.${ns}.svc:3128`,
      key: Buffer.from(before.TETHER_EGRESS_KEY!, 'base64').toString(),
    });
    const grant = { 'repo-0123456789abcdef': 'pypi.org:443' };
    await kubectlOk(['patch', 'configmap', GRANTS, '-n', ns, '--type=merge', '-p', JSON.stringify({ data: grant })]);
    await helmRelease('upgrade', 'tether', ns, { ...values, egress: { allow: ['registry.npmjs.org', 'pypi.org'] } });
    expect(await dataOf('secret', EGRESS)).toEqual(before);
    expect(await dataOf('configmap', GRANTS)).toEqual(grant);
    expect((await dataOf('configmap', EGRESS)).TETHER_EGRESS_ALLOW).toBe('registry.npmjs.org,pypi.org');
  });
});

describe('egress ServiceAccount', () => {
  it('reads Sessions and gets, watches and updates its grants ConfigMap by name; in the runner namespace \
lists and watches Pods only', async () => {
    expect(await extraPermissions(EGRESS, ns)).toEqual([
      'configmaps [] create',
      `configmaps [${GRANTS}] get list update watch`,
      'sessions.tether.dev [] get list watch',
    ]);
    expect(await extraPermissions(EGRESS, ns, runners)).toEqual(['pods [] list watch']);
    for (const verb of ['get', 'list', 'watch'])
      expect(await canI(EGRESS, ns, [verb, 'secrets', '-n', runners]), `${verb} runner secrets`).toBe(false);
    for (const verb of ['get', 'list', 'watch'])
      expect(await canI(EGRESS, ns, [verb, 'secrets', '-n', ns]), `${verb} secrets`).toBe(false);
    for (const verb of ['create', 'patch', 'delete'])
      expect(await canI(EGRESS, ns, [verb, 'sessions.tether.dev', '-n', ns]), `${verb} sessions`).toBe(false);
    expect(await canI(EGRESS, ns, ['update', 'configmaps/tether-relay-claims', '-n', ns])).toBe(false);
  });

  it('creates no ConfigMap but its grants one (the admission policy names it)', async () => {
    const create = (name: string) =>
      kubectlResult([
        'create',
        'configmap',
        name,
        '--dry-run=server',
        `--as=system:serviceaccount:${ns}:${EGRESS}`,
        '-n',
        ns,
      ]);
    const other = await create('tether-relay-repo-choices');
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain('the egress proxy creates only its grants ConfigMap');
    // Its own name passes admission and meets the chart's ConfigMap.
    const own = await create(GRANTS);
    expect(own.stderr).toContain('already exists');
  });
});

describe('runner Pod admission policy with egress', () => {
  const phone = '+14155550125';
  let aliases: V1HostAlias[];
  const runnerPod = () => desiredPod(unstoredSession(phone, ns), { ...config, hostAliases: aliases });
  const container = (pod: V1Pod, name: string) =>
    [...pod.spec!.containers, ...(pod.spec!.initContainers ?? [])].find((c) => c.name === name)!;
  beforeAll(async () => {
    const { serviceAccount } = desiredIdentity(unstoredSession(phone, ns), [], config);
    await kubectlOk([
      'create',
      `--as=system:serviceaccount:${ns}:tether-controller`,
      '-f',
      manifestFile([serviceAccount]),
    ]);
    // The two Services as the controller's account reads them (get, and watch by name, as its informers do).
    const read = async (name: string) =>
      JSON.parse(
        (await kubectlOk(['get', 'service', name, '-n', ns, '-o', 'json', `--as=${CONTROLLER_USER()}`])).stdout,
      ) as V1Service;
    const services = new Map(await Promise.all(['tether-relay', EGRESS].map(async (n) => [n, await read(n)] as const)));
    const made = hostAliases(config.egress!.noDns!.hosts, ns, (name) => services.get(name));
    if ('problem' in made) throw new Error(made.problem);
    aliases = made.aliases;
  });

  it("reads the relay's and the proxy's Services by name (get, watch), no other", async () => {
    expect(aliases.map((a) => a.hostnames)).toEqual([[`tether-relay.${ns}.svc`], [`tether-egress.${ns}.svc`]]);
    expect(aliases.every((a) => /^\d+\.\d+\.\d+\.\d+$/.test(a.ip!))).toBe(true);
    for (const verb of ['get', 'watch'])
      expect(await canI('tether-controller', ns, [verb, `services/${EGRESS}`, '-n', ns])).toBe(true);
    expect(await canI('tether-controller', ns, ['list', 'services', '-n', ns])).toBe(false);
    const watch = `/api/v1/namespaces/${ns}/services?watch=1&fieldSelector=metadata.name%3D${EGRESS}&timeoutSeconds=1`;
    const watched = await kubectlResult(['get', '--raw', watch, `--as=${CONTROLLER_USER()}`]);
    expect(watched.stderr).toBe('');
    expect(watched.stdout).toContain(`"name":"${EGRESS}"`);
  });

  it("admits the controller's runner Pod: the proxy URL and the Pod's own egress Secret in the runner \
container, no DNS", async () => {
    const pod = runnerPod();
    expect(pod.spec).toMatchObject({ dnsPolicy: 'None', dnsConfig: NO_DNS_CONFIG, hostAliases: aliases });
    expect(container(pod, 'runner').env).toEqual(
      expect.arrayContaining([
        { name: 'TETHER_EGRESS_URL', value: `http://tether-egress.${ns}.svc:3128` },
        { name: 'TETHER_EGRESS_TOKEN_FILE', value: '/var/run/secrets/tether/egress/token' },
      ]),
    );
    expect(pod.spec!.volumes).toContainEqual({
      name: 'egress-token',
      secret: { secretName: `${pod.metadata!.name}-egress`, defaultMode: 0o440 },
    });
    const admitted = await createPodAsController(ns, runners, pod);
    expect(admitted.stderr).toBe('');
    expect(admitted.code).toBe(0);
  });

  it.each<[string, (pod: V1Pod) => void, RegExp]>([
    [
      'the runner container carrying the credential itself (TETHER_EGRESS_TOKEN)',
      (pod) => container(pod, 'runner').env!.push({ name: 'TETHER_EGRESS_TOKEN', value: 'x'.repeat(43) }),
      /only the runner container carries the egress proxy's URL and credential file/,
    ],
    [
      'the runner container reading TETHER_EGRESS_TOKEN from the runner Secret',
      (pod) =>
        container(pod, 'runner').env!.push({
          name: 'TETHER_EGRESS_TOKEN',
          valueFrom: { secretKeyRef: { name: 'tether-runner', key: 'TETHER_EGRESS_TOKEN' } },
        }),
      /only the runner container carries the egress proxy's URL and credential file/,
    ],
    [
      'the agent container carrying TETHER_EGRESS_TOKEN_FILE',
      (pod) =>
        container(pod, 'agent').env!.push({
          name: 'TETHER_EGRESS_TOKEN_FILE',
          value: '/var/run/secrets/tether/egress/token',
        }),
      /only the runner container carries the egress proxy's URL and credential file/,
    ],
    [
      'the agent container mounting the egress Secret',
      (pod) => container(pod, 'agent').volumeMounts!.push({ name: 'egress-token', mountPath: '/loot' }),
      /only the runner container mounts/,
    ],
    [
      "another Pod's egress Secret",
      (pod) => (pod.spec!.volumes!.find((v) => v.name === 'egress-token')!.secret!.secretName = 'other-runner-egress'),
      /no Secret volume but their own/,
    ],
    [
      'the agent container carrying TETHER_EGRESS_URL',
      (pod) => container(pod, 'agent').env!.push({ name: 'TETHER_EGRESS_URL', value: config.egress!.url }),
      /only the runner container carries the egress proxy's URL and credential file/,
    ],
    [
      'the runner container reading its token file name from a ConfigMap',
      (pod) => {
        const file = container(pod, 'runner').env!.find((e) => e.name === 'TETHER_EGRESS_TOKEN_FILE')!;
        delete file.value;
        file.valueFrom = { configMapKeyRef: { name: 'tether-egress', key: 'TETHER_EGRESS_KEY' } };
      },
      /only the runner container carries the egress proxy's URL and credential file/,
    ],
    [
      'cluster DNS back (dnsPolicy ClusterFirst)',
      (pod) => {
        pod.spec!.dnsPolicy = 'ClusterFirst';
        delete pod.spec!.dnsConfig;
      },
      /runner Pods resolve no names/,
    ],
    [
      'another name server',
      (pod) => (pod.spec!.dnsConfig!.nameservers = ['192.0.2.53']),
      /runner Pods resolve no names/,
    ],
    [
      'a search domain',
      (pod) => (pod.spec!.dnsConfig!.searches = ['svc.cluster.local']),
      /runner Pods resolve no names/,
    ],
    [
      'a host name of its own in hostAliases',
      (pod) => pod.spec!.hostAliases!.push({ ip: '192.0.2.53', hostnames: ['pypi.org'] }),
      /hostAliases name only the relay's and the egress proxy's Services/,
    ],
    [
      'another proxy URL',
      (pod) => (container(pod, 'runner').env!.find((e) => e.name === 'TETHER_EGRESS_URL')!.value = 'http://evil:3128'),
      /the install's model and proxy settings/,
    ],
  ])('refuses %s', async (_, change, message) => {
    const pod = runnerPod();
    change(pod);
    const refused = await createPodAsController(ns, runners, pod);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(message);
  });

  it("writes only runner Pods' own egress Secrets (no GitHub App: no GitHub token Secret either)", async () => {
    const pod = 'p1-runner';
    const secret = (name: string, component: string, owner = pod) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        labels: { 'app.kubernetes.io/component': component },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: owner, uid: 'u-1' }],
      },
      data: { token: Buffer.from('x'.repeat(43)).toString('base64') },
    });
    const write = (object: object) =>
      kubectlResult([
        'create',
        '--dry-run=server',
        `--as=${CONTROLLER_USER()}`,
        '-n',
        runners,
        '-f',
        manifestFile([object]),
      ]);
    expect((await write(secret(`${pod}-egress`, 'runner-egress'))).stderr).toBe('');
    for (const [what, object] of [
      ["another Pod's name", secret('p2-runner-egress', 'runner-egress')],
      ['a GitHub token without a GitHub App', secret(`${pod}-github`, 'runner-github')],
      ['the runner Secret', secret('tether-runner', 'runner-egress')],
    ] as const) {
      const refused = await write(object);
      expect(refused.code, what).not.toBe(0);
      expect(refused.stderr, what).toMatch(/the controller writes only runner Pods' own Secrets/);
    }
  });

  it('with egress.enabled=false refuses any egress variable, and the controller adds none', async () => {
    const withEgress = runnerPod();
    await helmRelease('upgrade', 'tether', ns, { ...values, egress: { enabled: false } });
    const without = loadConfig(await installedControllerEnv(ns));
    expect(without.egress).toBeUndefined();
    await eventually(
      async () => {
        const refused = await createPodAsController(ns, runners, withEgress);
        expect(refused.stderr).toMatch(/egress|model and proxy settings/);
      },
      10_000,
      200,
    );
    const admitted = await createPodAsController(ns, runners, desiredPod(unstoredSession(phone, ns), without));
    expect(admitted.stderr).toBe('');
    const aliased = desiredPod(unstoredSession(phone, ns), without);
    aliased.spec!.hostAliases = aliases;
    expect((await createPodAsController(ns, runners, aliased)).stderr).toMatch(/keep the cluster's DNS as it is/);
    await kubectlOk(['get', 'configmap', GRANTS, '-n', ns]).then(
      () => expect.fail('the grants ConfigMap is still there with egress off'),
      (error: Error) => expect(error.message).toContain('NotFound'),
    );
  });
});
