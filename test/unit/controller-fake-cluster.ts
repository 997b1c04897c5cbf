// A small in-memory cluster (ClusterOps) and the informers' cache of it, for whole reconcile passes
// without an API server. The cache shows the cluster only when the test syncs it, as a lagging
// informer would; each change it then delivers goes through the expectations as the controller's
// informer handlers send it.
import type { V1PersistentVolumeClaim, V1Pod, V1Role, V1Secret, V1Service } from '@kubernetes/client-node';
import pino from 'pino';
import { LABEL_PHONE_HASH, LABEL_SESSION } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import type { ClusterOps } from '../../controller/cluster.ts';
import type { ControllerConfig } from '../../controller/config.ts';
import { createExpectations, type CachedKind } from '../../controller/expectations.ts';
import type { GitHubApp } from '../../controller/github-app.ts';
import { reconcileSession, type ClusterCache, type PassResult } from '../../controller/reconcile.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

type Obj = { metadata?: { name?: string; namespace?: string; resourceVersion?: string } };
const keyOf = (o: Obj) => `${o.metadata!.namespace}/${o.metadata!.name}`;
const apiError = (code: number, reason: string) => Object.assign(new Error(reason), { code, body: { reason } });
const clone = <T>(o: T): T => structuredClone(o);

export interface World {
  cluster: {
    sessions: Map<string, Session>;
    pods: Map<string, V1Pod>;
    pvcs: Map<string, V1PersistentVolumeClaim>;
    secrets: Map<string, V1Secret>;
    /** The Services runner Pods dial by name, by name (the controller's informers of them, always current). */
    services: Map<string, V1Service>;
  };
  cache: { sessions: Map<string, Session>; pods: Map<string, V1Pod> };
  roles: Map<string, V1Role>;
  /** Every call the pass made on the cluster, in order ("patchStatus ns/a", "conflict ns/a", …). */
  calls: string[];
  /** Session keys queued by the expectations or by the phone's wake. */
  queued: string[];
  ops: ClusterOps;
  /** Delivers the cluster's state to the cache, as the informers would; returns the keys asking for a pass. */
  sync(): string[];
  pass(key: string): Promise<PassResult>;
  /** Passes of the queued keys until none is left (at most `limit`). */
  settle(limit?: number): Promise<void>;
}

export function fakeWorld(
  config: ControllerConfig,
  now: () => Date,
  sessions: Session[],
  pods: V1Pod[] = [],
  github?: GitHubApp,
): World {
  let version = 100;
  const stamp = <T extends Obj>(o: T): T => ({ ...o, metadata: { ...o.metadata, resourceVersion: String(++version) } });
  const cluster: World['cluster'] = {
    sessions: new Map(sessions.map((s) => [keyOf(s), clone(s)])),
    pods: new Map(pods.map((p) => [keyOf(p), clone(p)])),
    pvcs: new Map(),
    secrets: new Map(),
    services: new Map(),
  };
  const cache: World['cache'] = { sessions: new Map(cluster.sessions), pods: new Map(cluster.pods) };
  const roles = new Map<string, V1Role>();
  const calls: string[] = [];
  const queued: string[] = [];
  const ops: ClusterOps = {
    getSession: async (ns, name) => clone(cluster.sessions.get(`${ns}/${name}`)),
    patchStatus: async (ns, name, status, resourceVersion) => {
      const current = cluster.sessions.get(`${ns}/${name}`);
      if (!current) throw apiError(404, 'NotFound');
      if (current.metadata.resourceVersion !== resourceVersion) {
        calls.push(`conflict ${ns}/${name}`);
        throw apiError(409, 'Conflict');
      }
      calls.push(`patchStatus ${ns}/${name}`);
      const next = stamp({ ...current, status: { ...current.status, ...status } });
      cluster.sessions.set(`${ns}/${name}`, next);
      return clone(next);
    },
    deleteSession: async (ns, name) => {
      calls.push(`deleteSession ${ns}/${name}`);
      cluster.sessions.delete(`${ns}/${name}`);
    },
    getPod: async (ns, name) => clone(cluster.pods.get(`${ns}/${name}`)),
    ensurePod: async (pod) => {
      const existing = cluster.pods.get(keyOf(pod));
      if (existing) return clone(existing);
      calls.push(`createPod ${keyOf(pod)}`);
      const made = stamp({
        ...pod,
        metadata: { ...pod.metadata, uid: `pod-uid-${version}`, creationTimestamp: now() },
        status: { phase: 'Pending' },
      });
      cluster.pods.set(keyOf(pod), made);
      return clone(made);
    },
    deletePod: async (ns, name) => {
      calls.push(`deletePod ${ns}/${name}`);
      cluster.pods.delete(`${ns}/${name}`);
    },
    ensurePvc: async (pvc) => {
      if (!cluster.pvcs.has(keyOf(pvc))) cluster.pvcs.set(keyOf(pvc), stamp(pvc));
      return clone(cluster.pvcs.get(keyOf(pvc))!);
    },
    ensureIdentity: async ({ role }) => void roles.set(keyOf(role), stamp(role)),
    recordEvent: async (event) => void calls.push(`event ${event.reason}`),
    putSecret: async (secret) => {
      calls.push(`putSecret ${keyOf(secret)}`);
      cluster.secrets.set(keyOf(secret), stamp(clone(secret)));
    },
    annotatePod: async (ns, name, annotations) => {
      const current = cluster.pods.get(`${ns}/${name}`);
      if (!current) throw apiError(404, 'NotFound');
      calls.push(`annotatePod ${ns}/${name}`);
      const next = stamp({
        ...current,
        metadata: { ...current.metadata, annotations: { ...current.metadata?.annotations, ...annotations } },
      });
      cluster.pods.set(`${ns}/${name}`, next);
      return clone(next);
    },
  };
  const expectations = createExpectations({
    cached: { sessions: (k) => cache.sessions.get(k), pods: (k) => cache.pods.get(k) },
    wake: (key) => queued.push(key),
  });
  const clusterCache: ClusterCache = {
    session: (key) => clone(cache.sessions.get(key)),
    pod: (ns, name) => cache.pods.get(`${ns}/${name}`),
    pvc: (ns, name) => cluster.pvcs.get(`${ns}/${name}`),
    identity: (ns, name) =>
      roles.has(`${ns}/${name}`) ? { role: roles.get(`${ns}/${name}`)!, bound: true } : undefined,
    siblings: (s) =>
      [...cache.sessions.values()].filter((o) => testPhoneHash(o.spec.phone) === testPhoneHash(s.spec.phone)),
    phonePods: (hash) => [...cache.pods.values()].filter((p) => p.metadata?.labels?.[LABEL_PHONE_HASH] === hash),
    boundTo: (pod) => [...cache.sessions.values()].filter((s) => s.status?.podName === pod.metadata?.name),
    service: (name) => cluster.services.get(name),
  };
  const deliver = <T extends Obj>(kind: CachedKind, from: Map<string, T>, to: Map<string, T>): string[] => {
    const asks: string[] = [];
    for (const key of new Set([...from.keys(), ...to.keys()])) {
      const object = from.get(key);
      if (object?.metadata?.resourceVersion === to.get(key)?.metadata?.resourceVersion) continue;
      if (object) to.set(key, object);
      else to.delete(key);
      if (expectations.observed(kind, key, object)) asks.push(key);
    }
    return asks;
  };
  const world: World = {
    cluster,
    cache,
    roles,
    calls,
    queued,
    ops,
    sync: () => {
      const podOwners = new Map(
        [...cluster.pods, ...cache.pods].map(([k, p]) => [k, p.metadata?.labels?.[LABEL_SESSION]]),
      );
      const owners = deliver('pods', cluster.pods, cache.pods).map(
        (key) => `${config.namespace}/${podOwners.get(key)}`,
      );
      return [...deliver('sessions', cluster.sessions, cache.sessions), ...owners];
    },
    pass: (key) =>
      reconcileSession(key, {
        ops,
        cache: clusterCache,
        expectations,
        config,
        logger: pino({ level: 'silent' }),
        now,
        github,
        wakeWaiting: (s) => {
          for (const o of clusterCache.siblings(s))
            if (!o.status?.phase || o.status.phase === 'Queued') queued.push(keyOf(o));
        },
      }),
    async settle(limit = 10) {
      for (let i = 0; i < limit && queued.length > 0; i++) await world.pass(queued.shift()!);
    },
  };
  return world;
}
