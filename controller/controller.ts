// Wires informers (Sessions, runner Pods, workspace PVCs) to the work queue and
// reconcileSession. Every change enqueues the Session(s) it concerns; nothing else.
import type { KubeConfig, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import type pino from 'pino';
import { createInformer, type Informer } from '../common/kube/informer.ts';
import { sessionsPath } from '../common/kube/sessions.ts';
import { createWorkQueue, type WorkQueue } from '../common/kube/work-queue.ts';
import { phoneHash } from '../common/session/display.ts';
import { LABEL_COMPONENT, LABEL_PART_OF, LABEL_PHONE_HASH } from '../common/session/names.ts';
import type { Session } from '../common/session/schema.ts';
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
  /** Reconcile passes run so far, by Session key. */
  readonly passes: Map<string, number>;
}

const RUNNER_SUFFIX = '-runner';

export function createController(deps: ControllerDeps): Controller {
  const { kubeConfig, config, logger, metrics } = deps;
  const ns = config.namespace;
  const informer = <T extends { metadata?: { name?: string; namespace?: string } }>(resource: string, path: string, labelSelector?: string) =>
    createInformer<T>({
      kube: kubeConfig, path, labelSelector, logger: logger.child({ informer: resource }), stallTimeoutMs: config.stallTimeoutMs,
      onRestart: (reason) => metrics?.watchRestart(resource, reason),
    });
  const sessions = informer<Session>('sessions', sessionsPath(ns));
  const pods = informer<V1Pod>('pods', `/api/v1/namespaces/${ns}/pods`, `${LABEL_COMPONENT}=runner,${LABEL_PART_OF}=tether`);
  const pvcs = informer<V1PersistentVolumeClaim>('persistentvolumeclaims', `/api/v1/namespaces/${ns}/persistentvolumeclaims`, `${LABEL_COMPONENT}=workspace`);

  const byPhone = new Map<string, Set<string>>();
  const seen = new Map<string, { phone: string; phase?: string }>();
  const siblingKeys = (phone: string) => [...(byPhone.get(phone) ?? [])];
  const passes = new Map<string, number>();

  const reconcileDeps: ReconcileDeps = {
    ops: deps.ops ?? kubeClusterOps(kubeConfig),
    config,
    logger,
    now: deps.now ?? (() => new Date()),
    cachedSession: (key) => sessions.get(key),
    cachedPod: (namespace, name) => pods.get(`${namespace}/${name}`),
    cachedPvc: (namespace, name) => pvcs.get(`${namespace}/${name}`),
    siblings: (s) => siblingKeys(phoneHash(s.spec.phone)).map((k) => sessions.get(k)).filter((x): x is Session => x !== undefined),
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
      passes.set(key, (passes.get(key) ?? 0) + 1);
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

  const enqueuePhone = (phone: string, onlyUnfinished: boolean) => {
    for (const key of siblingKeys(phone)) {
      if (!onlyUnfinished || !isTerminal(sessions.get(key)?.status?.phase)) queue.add(key);
    }
  };

  sessions.onChange((key, session) => {
    const before = seen.get(key);
    if (!session) {
      seen.delete(key);
      if (before) {
        byPhone.get(before.phone)?.delete(key);
        enqueuePhone(before.phone, false);
      }
      return;
    }
    const phone = phoneHash(session.spec.phone);
    const phase = session.status?.phase;
    seen.set(key, { phone, phase });
    if (!byPhone.has(phone)) byPhone.set(phone, new Set());
    byPhone.get(phone)!.add(key);
    queue.add(key);
    if (!before || before.phase !== phase) enqueuePhone(phone, false);
  });
  pods.onChange((key) => {
    if (key.endsWith(RUNNER_SUFFIX)) queue.add(key.slice(0, -RUNNER_SUFFIX.length));
  });
  pvcs.onChange((_key, pvc) => {
    const phone = pvc?.metadata?.labels?.[LABEL_PHONE_HASH];
    if (phone) enqueuePhone(phone, true);
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
    passes,
  };
}
