// Wires informers (Sessions, runner Pods, workspace PVCs) to the work queue and
// reconcileSession. Every change enqueues the Session(s) it concerns; nothing else. A Session's
// change queues that Session; the phone's waiting ones are woken by the effects of its end.
import type { KubeConfig, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import type pino from 'pino';
import { createInformer, type Informer } from '../common/kube/informer.ts';
import { createWorkQueue, type WorkQueue } from '../common/kube/work-queue.ts';
import { phoneHash } from '../common/session/display.ts';
import { LABEL_COMPONENT, LABEL_PART_OF, LABEL_PHONE_HASH } from '../common/session/names.ts';
import { GROUP, KIND, PLURAL, VERSION, type Session } from '../common/session/schema.ts';
import { isTerminal } from '../common/session/state-machine.ts';
import { kubeClusterOps, type ClusterOps } from './cluster.ts';
import type { ControllerConfig } from './config.ts';
import type { ControllerMetrics } from './metrics.ts';
import { reconcileSession, type ReconcileDeps } from './reconcile.ts';

export interface ControllerDeps {
  kubeConfig: KubeConfig;
  config: ControllerConfig;
  logger: pino.Logger;
  metrics?: ControllerMetrics;
  /** Replaces the API writes (tests interpose faults here). */
  ops?: ClusterOps;
  now?: () => Date;
}

export interface Controller {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly synced: boolean;
  readonly sessions: Informer<Session>;
}

/** The Session a runner Pod belongs to: its controller owner reference. */
function ownerSession(pod: V1Pod): string | undefined {
  const owner = pod.metadata?.ownerReferences?.find((r) => r.controller && r.kind === KIND);
  return owner ? `${pod.metadata!.namespace}/${owner.name}` : undefined;
}

export function createController(deps: ControllerDeps): Controller {
  const { kubeConfig, config, logger, metrics } = deps;
  const ns = config.namespace;
  const informer = <T extends { metadata?: { name?: string; namespace?: string } }>(resource: string, path: string, labelSelector?: string) =>
    createInformer<T>({
      kubeConfig, path, labelSelector, logger: logger.child({ informer: resource }), stallTimeoutMs: config.stallTimeoutMs,
      onRestart: (reason) => metrics?.watchRestart(resource, reason),
    });
  const sessions = informer<Session>('sessions', `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`);
  const pods = informer<V1Pod>('pods', `/api/v1/namespaces/${ns}/pods`, `${LABEL_COMPONENT}=runner,${LABEL_PART_OF}=tether`);
  const pvcs = informer<V1PersistentVolumeClaim>('persistentvolumeclaims', `/api/v1/namespaces/${ns}/persistentvolumeclaims`, `${LABEL_COMPONENT}=workspace`);

  const byPhone = new Map<string, Set<string>>();
  const phoneOf = new Map<string, string>();
  const podOwners = new Map<string, string>();
  const siblingKeys = (phone: string) => [...(byPhone.get(phone) ?? [])];
  const isWaiting = (key: string) => {
    const phase = sessions.get(key)?.status?.phase;
    return phase === undefined || phase === 'Queued';
  };

  const reconcileDeps: ReconcileDeps = {
    ops: deps.ops ?? kubeClusterOps(kubeConfig),
    config,
    logger,
    now: deps.now ?? (() => new Date()),
    cachedSession: (key) => sessions.get(key),
    cachedPod: (namespace, name) => pods.get(`${namespace}/${name}`),
    cachedPvc: (namespace, name) => pvcs.get(`${namespace}/${name}`),
    siblings: (s) => siblingKeys(phoneHash(s.spec.phone)).map((k) => sessions.get(k)).filter((x): x is Session => x !== undefined),
    wakeWaiting: (s) => enqueuePhone(phoneHash(s.spec.phone), isWaiting),
    observer: metrics?.observer,
    approvals: new Map(),
  };

  const queue: WorkQueue = createWorkQueue({
    concurrency: config.concurrency,
    hooks: {
      ...metrics?.queueHooks,
      retry: (key, delayMs, error) => {
        metrics?.queueHooks.retry?.(key, delayMs, error);
        logger.warn({ session: key.split('/')[1], err: error, retryInMs: delayMs }, 'reconcile failed; retrying');
      },
    },
    handler: async (key) => {
      const started = performance.now();
      let result: 'success' | 'requeue' | 'error' = 'error';
      try {
        const outcome = await reconcileSession(key, reconcileDeps);
        result = outcome.requeueAfterMs !== undefined ? 'requeue' : 'success';
        return outcome;
      } finally {
        metrics?.reconciled(result, (performance.now() - started) / 1000);
      }
    },
  });

  function enqueuePhone(phone: string, which: (key: string) => boolean): void {
    for (const key of siblingKeys(phone)) if (which(key)) queue.add(key);
  }
  const unfinished = (key: string) => !isTerminal(sessions.get(key)?.status?.phase);

  sessions.onChange((key, session) => {
    if (session) {
      const phone = phoneHash(session.spec.phone);
      phoneOf.set(key, phone);
      if (!byPhone.has(phone)) byPhone.set(phone, new Set());
      byPhone.get(phone)!.add(key);
      queue.add(key);
      return;
    }
    const phone = phoneOf.get(key);
    phoneOf.delete(key);
    if (phone === undefined) return;
    byPhone.get(phone)?.delete(key);
    if (byPhone.get(phone)?.size === 0) byPhone.delete(phone);
    // A Session deleted while active frees the phone without an end of its own.
    enqueuePhone(phone, unfinished);
  });
  pods.onChange((key, pod) => {
    const owner = pod ? ownerSession(pod) : podOwners.get(key);
    if (pod && owner) podOwners.set(key, owner);
    else podOwners.delete(key);
    if (owner) queue.add(owner);
  });
  pvcs.onChange((_key, pvc) => {
    const phone = pvc?.metadata?.labels?.[LABEL_PHONE_HASH];
    if (phone) enqueuePhone(phone, unfinished);
  });

  return {
    async start() {
      await Promise.all([sessions.start(), pods.start(), pvcs.start()]);
      queue.start();
      logger.info({ namespace: ns, sessions: sessions.list().length }, 'controller started');
    },
    async stop() {
      sessions.stop();
      pods.stop();
      pvcs.stop();
      await queue.stop();
    },
    get synced() {
      return sessions.synced && pods.synced && pvcs.synced;
    },
    sessions,
  };
}
