// The shared informer against the real API server, with faults injected by a proxy.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KubeConnection } from '../../common/kube/connection.ts';
import { apiError } from '../../common/kube/errors.ts';
import { createInformer, type Informer } from '../../common/kube/informer.ts';
import { loadConnection } from '../../common/kube/kubeconfig.ts';
import { getJson } from '../../common/kube/raw.ts';
import { kubeconfigYaml } from '../../local/control-plane/control-plane.ts';
import { adminKubeConfig, createNamespace, deleteNamespace } from '../support/cluster.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { eventually } from '../support/eventually.ts';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let proxy: FaultProxy;
const running: Array<Informer<V1ConfigMap>> = [];

beforeAll(async () => {
  kc = adminKubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  ns = await createNamespace(kc, 'inf');
  proxy = await startFaultProxy(kc);
});
afterEach(() => {
  for (const informer of running.splice(0)) informer.stop();
});
afterAll(async () => {
  await proxy.close();
  await deleteNamespace(kc, ns);
});

function configMaps(
  over: KubeConnection,
  extra: {
    labelSelector?: string;
    name?: string;
    stallTimeoutMs?: number;
    watchTimeoutSeconds?: number;
    logger?: pino.Logger;
  } = {},
) {
  const restarts: string[] = [];
  const changes: Array<[string, string | undefined]> = [];
  const informer = createInformer<V1ConfigMap>({
    kube: over,
    path: `/api/v1/namespaces/${ns}/configmaps`,
    logger,
    onRestart: (reason) => restarts.push(reason),
    backoffMs: { min: 20, max: 200 },
    ...extra,
  });
  informer.onChange((key, object) => changes.push([key, object?.data?.v]));
  running.push(informer);
  return { informer, restarts, changes };
}

const put = (name: string, v: string, labels: Record<string, string> = { t: 'x' }) =>
  core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name, labels }, data: { v } } });
const update = (name: string, v: string) =>
  core.replaceNamespacedConfigMap({
    name,
    namespace: ns,
    body: { metadata: { name, labels: { t: 'x' } }, data: { v } },
  });
const remove = (name: string) => core.deleteNamespacedConfigMap({ name, namespace: ns });
const values = (informer: Informer<V1ConfigMap>) =>
  Object.fromEntries(
    informer
      .list()
      .filter((c) => c.metadata?.labels?.t === 'x')
      .map((c) => [c.metadata!.name!, c.data?.v]),
  );

/** A connection as a ServiceAccount whose Role grants only get and watch on the ConfigMap `name`. */
async function onlyGetAndWatch(name: string): Promise<KubeConnection> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const meta = { name: `reader-${name}`, namespace: ns };
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: meta } });
  await rbac.createNamespacedRole({
    namespace: ns,
    body: {
      metadata: meta,
      rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: [name], verbs: ['get', 'watch'] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: meta,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: meta.name },
      subjects: [{ kind: 'ServiceAccount', ...meta }],
    },
  });
  const { status } = await core.createNamespacedServiceAccountToken({
    namespace: ns,
    name: meta.name,
    body: { spec: { audiences: [], expirationSeconds: 600 } },
  });
  const file = join(mkdtempSync(join(tmpdir(), 'tether-reader-')), 'kubeconfig');
  writeFileSync(
    file,
    kubeconfigYaml(
      kc.getCurrentCluster()!.server,
      { caCert: kc.getCurrentCluster()!.caFile! },
      { name: meta.name, token: status!.token },
    ),
  );
  return loadConnection({ KUBECONFIG: file });
}

describe('informer on a real API server', () => {
  it('lists, then reports each change level-based: the object, or undefined when gone', async () => {
    await put('a1', '1');
    await put('a2', '1', { t: 'other' });
    const { informer, changes } = configMaps(connectionFromKubeConfig(kc), { labelSelector: 't=x' });
    await informer.start();
    expect(informer.synced).toBe(true);
    expect(values(informer)).toEqual({ a1: '1' });
    expect(informer.get(`${ns}/a1`)?.data?.v).toBe('1');
    expect(informer.get(`${ns}/a2`)).toBeUndefined();
    await put('a3', '1');
    await update('a1', '2');
    await remove('a3');
    await eventually(() =>
      expect(changes).toEqual([
        [`${ns}/a1`, '1'],
        [`${ns}/a3`, '1'],
        [`${ns}/a1`, '2'],
        [`${ns}/a3`, undefined],
      ]),
    );
    await Promise.all([remove('a1'), remove('a2')]);
  });

  it('resumes from its last version when the server ends the watch, without a relist', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
    const { informer, restarts } = configMaps(connectionFromKubeConfig(kc), { watchTimeoutSeconds: 1, logger: log });
    await informer.start();
    await eventually(() => expect(lines.join('')).toContain('watch closed by the server; resuming'), 30_000);
    await put('b1', '1');
    await eventually(() => expect(values(informer).b1).toBe('1'));
    expect(restarts).toEqual([]);
    await remove('b1');
  });

  it('restarts after a dropped connection and misses nothing changed meanwhile', async () => {
    await put('c1', '1');
    const { informer, restarts } = configMaps(connectionFromKubeConfig(proxy.kubeConfig));
    await informer.start();
    proxy.dropAll();
    await update('c1', '2');
    await put('c2', '1');
    await eventually(() => expect(values(informer)).toMatchObject({ c1: '2', c2: '1' }));
    expect(restarts).toContain('error');
    await Promise.all([remove('c1'), remove('c2')]);
  });

  it('relists on 410 Gone and reports objects deleted while it was not watching', async () => {
    await put('d1', '1');
    await put('d2', '1');
    const { informer, restarts, changes } = configMaps(connectionFromKubeConfig(proxy.kubeConfig));
    await informer.start();
    const listsBefore = proxy.requests.filter((r) => r.includes('/configmaps?') && !r.includes('watch=')).length;
    proxy.freeze(true);
    await remove('d2');
    await update('d1', '2');
    proxy.goneOnNextWatch();
    proxy.freeze(false);
    proxy.dropAll();
    await eventually(() => expect(restarts).toContain('gone'));
    await eventually(() => expect(values(informer)).toEqual({ d1: '2' }));
    expect(changes).toContainEqual([`${ns}/d2`, undefined]);
    const listsAfter = proxy.requests.filter((r) => r.includes('/configmaps?') && !r.includes('watch=')).length;
    expect(listsAfter).toBeGreaterThan(listsBefore);
    await remove('d1');
  });

  it('relists when a watch goes silent for stallTimeoutMs', async () => {
    const { informer, restarts } = configMaps(connectionFromKubeConfig(proxy.kubeConfig), { stallTimeoutMs: 400 });
    await informer.start();
    proxy.freeze(true);
    await put('e1', '1');
    await eventually(() => expect(restarts).toContain('stall'));
    proxy.freeze(false);
    await eventually(() => expect(values(informer).e1).toBe('1'));
    await remove('e1');
  });

  it(`watches one object by name with only get and \
watch on it (no list), through the short kubeconfig path`, async () => {
    const limited = await onlyGetAndWatch('solo');
    await expect(getJson(limited, `/api/v1/namespaces/${ns}/configmaps`)).rejects.toSatisfy(
      (e) => apiError(e)?.code === 403,
    );
    const { informer, restarts, changes } = configMaps(limited, { name: 'solo' });
    await informer.start();
    expect(informer.list()).toEqual([]);
    await put('solo', '1');
    await put('other', '1');
    await update('solo', '2');
    await remove('solo');
    await eventually(() =>
      expect(changes).toEqual([
        [`${ns}/solo`, '1'],
        [`${ns}/solo`, '2'],
        [`${ns}/solo`, undefined],
      ]),
    );
    expect(restarts).toEqual([]);
    await remove('other');
  });

  it('one object by name: on 410 Gone it reads the object again and watches from the newest version', async () => {
    await put('g1', '1');
    const seen = proxy.requests.length;
    const { informer, restarts } = configMaps(connectionFromKubeConfig(proxy.kubeConfig), { name: 'g1' });
    await informer.start();
    proxy.freeze(true);
    await update('g1', '2');
    proxy.goneOnNextWatch();
    proxy.freeze(false);
    proxy.dropAll();
    await eventually(() => expect(values(informer)).toEqual({ g1: '2' }));
    await update('g1', '3');
    await eventually(() => expect(values(informer)).toEqual({ g1: '3' }));
    expect(restarts.filter((r) => r === 'gone')).toHaveLength(1);
    const requests = proxy.requests.slice(seen);
    const collection = requests.filter((r) => r.includes('/configmaps?'));
    expect(collection.length).toBeGreaterThanOrEqual(2);
    expect(
      collection.filter((r) => !(r.includes('watch=1') && r.includes('fieldSelector=metadata.name%3Dg1'))),
    ).toEqual([]);
    expect(requests.filter((r) => r.endsWith('/configmaps/g1')).length).toBeGreaterThanOrEqual(2);
    // After the read, the watch starts at the newest version (an object's own version may be compacted away).
    const afterRead = requests.slice(requests.findLastIndex((r) => r.endsWith('/configmaps/g1')));
    expect(afterRead.find((r) => r.includes('watch=1'))).toContain('resourceVersion=&');
    await remove('g1');
  });

  it('start() rejects when stopped before the first list succeeds', async () => {
    const broken = proxy.kubeConfig.exportConfig().replace(/127\.0\.0\.1:\d+/, '127.0.0.1:1');
    const { KubeConfig } = await import('@kubernetes/client-node');
    const bad = new KubeConfig();
    bad.loadFromString(broken);
    const { informer, restarts } = configMaps(connectionFromKubeConfig(bad));
    const starting = informer.start();
    await eventually(() => expect(restarts.length).toBeGreaterThan(1));
    informer.stop();
    await expect(starting).rejects.toThrow(/stopped before it synced/);
  });
});
