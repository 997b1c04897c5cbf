// Wires informers (Sessions, runner Pods, workspace PVCs) to the work queue and
// reconcileSession. Every change enqueues the Session(s) it concerns; nothing else. A Session's
// change queues that Session; the phone's waiting ones are woken by the effects of its end. Every
// change passes through the expectations first (expectations.ts): the echo of the controller's own
// settled write asks for no pass, and passes that waited for it are queued.
import type { KubeConnection } from '../common/kube/connection.ts';
import type { V1PersistentVolumeClaim, V1Pod, V1Role, V1RoleBinding, V1Service } from '@kubernetes/client-node';
import type pino from 'pino';
import { createInformer, type Informer } from '../common/kube/informer.ts';
import { collectionPath, KINDS, type Kind } from '../common/kube/resources.ts';
import { createWorkQueue, type WorkQueue } from '../common/kube/work-queue.ts';
import {
  LABEL_COMPONENT,
  LABEL_PART_OF,
  LABEL_PHONE_HASH,
  LABEL_SESSION,
  runnerName,
} from '../common/session/names.ts';
import type { Session } from '../common/session/schema.ts';
import { isTerminal } from '../common/session/state-machine.ts';
import { RUNNER_IDENTITY_COMPONENT } from './identity.ts';
import { trimPod, trimSession } from './cache.ts';
import { kubeClusterOps, type ClusterOps } from './cluster.ts';
import type { ControllerConfig } from './config.ts';
import type { ControllerMetrics } from './metrics.ts';
import { createExpectations, type Expectations } from './expectations.ts';
import { githubApp, type GitHubApp } from './github-app.ts';
import { reconcileSession, sessionKey as sessionKeyOf, type ClusterCache, type ReconcileDeps } from './reconcile.ts';
import { startProblem } from './start.ts';
import { createPhoneIndex, createPodIndex, type PhoneIndex, type PodIndex } from './indexes.ts';

export interface ControllerDeps {
  kubeConfig: KubeConnection;
  config: ControllerConfig;
  logger: pino.Logger;
  metrics?: ControllerMetrics;
  /** Replaces the API writes (tests interpose faults here). */
  ops?: ClusterOps;
  /** Replaces the GitHub App made from config.githubApp (tests move its clock). */
  github?: GitHubApp;
  now?: () => Date;
}

export interface Controller {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly synced: boolean;
  readonly sessions: Informer<Session>;
}

/** What a reconcile pass reads of a runner Pod: whether it is there, going, held back (and why), and how it ended. */
const podFacts = (pod: V1Pod | undefined) => {
  const ended = pod?.status?.containerStatuses?.find((c) => c.name === 'runner')?.state?.terminated;
  if (!pod) return 'gone';
  const deleting = Boolean(pod.metadata?.deletionTimestamp);
  return `${pod.status?.phase}|${deleting}|${ended?.exitCode}|${pod.status?.reason}|${startProblem(pod)?.reason}`;
};

/**
 * The key of the Session a runner Pod belongs to (its session label, the Sessions' namespace),
 * when the change is one a pass would act on: the Pod's facts changed, and its Session still
 * cares (a finished Session's Pod being removed asks nothing more).
 */
function podChanges(sessionNamespace: string, sessionOf: (key: string) => Session | undefined) {
  const seen = new Map<string, { owner: string; facts: string }>();
  return (key: string, pod: V1Pod | undefined): string | undefined => {
    const label = pod?.metadata?.labels?.[LABEL_SESSION];
    const owner = label ? `${sessionNamespace}/${label}` : seen.get(key)?.owner;
    const facts = podFacts(pod);
    const before = seen.get(key)?.facts;
    if (pod && owner) seen.set(key, { owner, facts });
    else seen.delete(key);
    if (!owner || facts === before) return undefined;
    const finished = isTerminal(sessionOf(owner)?.status?.phase);
    return finished && (!pod || pod.metadata?.deletionTimestamp) ? undefined : owner;
  };
}

type Informers = {
  sessions: Informer<Session>;
  pods: Informer<V1Pod>;
  pvcs: Informer<V1PersistentVolumeClaim>;
  roles: Informer<V1Role>;
  bindings: Informer<V1RoleBinding>;
  /** The Services runner Pods dial by name, each by its name (get and watch of that one: runner-network.ts). */
  services: Informer<V1Service>[];
};

function createInformers({ kubeConfig, config, logger, metrics }: ControllerDeps): Informers {
  const { namespace: ns, runnerNamespace: runners } = config;
  const informer = <T extends { metadata?: { name?: string; namespace?: string } }>(
    kind: Kind,
    namespace: string,
    labelSelector?: string,
    trim?: (o: T) => void,
    name?: string,
  ) =>
    createInformer<T>({
      kube: kubeConfig,
      path: collectionPath(kind, namespace),
      labelSelector,
      name,
      trim,
      logger: logger.child({ informer: kind.plural }),
      stallTimeoutMs: config.stallTimeoutMs,
      onRestart: (reason) => metrics?.watchRestart(kind.plural, reason),
    });
  const identity = `${LABEL_COMPONENT}=${RUNNER_IDENTITY_COMPONENT}`;
  return {
    sessions: informer<Session>(KINDS.sessions, ns, undefined, trimSession),
    pods: informer<V1Pod>(KINDS.pods, runners, `${LABEL_COMPONENT}=runner,${LABEL_PART_OF}=tether`, trimPod),
    pvcs: informer<V1PersistentVolumeClaim>(KINDS.persistentVolumeClaims, runners, `${LABEL_COMPONENT}=workspace`),
    roles: informer<V1Role>(KINDS.roles, ns, identity),
    bindings: informer<V1RoleBinding>(KINDS.roleBindings, ns, identity),
    services: (config.egress?.noDns?.hosts ?? []).map(({ service }) =>
      informer<V1Service>(KINDS.services, ns, undefined, undefined, service),
    ),
  };
}

function createReconcileQueue({ config, logger, metrics }: ControllerDeps, reconcileDeps: ReconcileDeps): WorkQueue {
  return createWorkQueue({
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
        metrics?.passed(key, outcome);
        result = outcome.requeueAfterMs !== undefined ? 'requeue' : 'success';
        return outcome;
      } finally {
        metrics?.reconciled(result, (performance.now() - started) / 1000);
      }
    },
  });
}

/** The informers as a pass reads them. */
function clusterCache(
  { sessions, pods, pvcs, roles, bindings, services }: Informers,
  phones: PhoneIndex,
  podsByPhone: PodIndex,
  namespace: string,
): ClusterCache {
  const phoneSessions = (phone: string) =>
    phones
      .keys(phone)
      .map((key) => sessions.get(key))
      .filter((x): x is Session => x !== undefined);
  return {
    session: (key) => sessions.get(key),
    pod: (namespace, name) => pods.get(`${namespace}/${name}`),
    pvc: (namespace, name) => pvcs.get(`${namespace}/${name}`),
    identity: (namespace, name) => {
      const role = roles.get(`${namespace}/${name}`);
      return role && { role, bound: bindings.get(`${namespace}/${name}`) !== undefined };
    },
    siblings: (s) => phoneSessions(s.spec.phone),
    phonePods: (hash) =>
      podsByPhone
        .keys(hash)
        .map((key) => pods.get(key))
        .filter((x): x is V1Pod => x !== undefined),
    boundTo: (pod) => {
      const phone = phones.phoneOf(pod.metadata?.labels?.[LABEL_PHONE_HASH] ?? '');
      return phone === undefined ? [] : phoneSessions(phone).filter((s) => s.status?.podName === pod.metadata?.name);
    },
    service: (name) => services.map((i) => i.get(`${namespace}/${name}`)).find((s) => s !== undefined),
  };
}

export function createController(deps: ControllerDeps): Controller {
  const informers = createInformers(deps);
  const { sessions, pods, pvcs } = informers;
  const phones = createPhoneIndex(deps.config);
  const podsByPhone = createPodIndex();
  const expectations: Expectations = createExpectations({
    cached: { sessions: (key) => sessions.get(key), pods: (key) => pods.get(key) },
    wake: (key) => queue.add(key),
  });
  const podChanged = podChanges(deps.config.namespace, (key) => sessions.get(key));
  const phaseOf = (key: string) => sessions.get(key)?.status?.phase;
  const waiting = (key: string) => phaseOf(key) === undefined || phaseOf(key) === 'Queued';
  const unfinished = (key: string) => !isTerminal(phaseOf(key));
  const enqueuePhone = (phone: string, which: (key: string) => boolean) => {
    for (const key of phones.keys(phone)) if (which(key)) queue.add(key);
  };
  const queue = createReconcileQueue(deps, {
    ops: deps.ops ?? kubeClusterOps(deps.kubeConfig),
    cache: clusterCache(informers, phones, podsByPhone, deps.config.namespace),
    expectations,
    config: deps.config,
    logger: deps.logger,
    now: deps.now ?? (() => new Date()),
    github: deps.github ?? (deps.config.githubApp && githubApp(deps.config.githubApp)),
    wakeWaiting: (s) => enqueuePhone(s.spec.phone, waiting),
  });

  sessions.onChange((key, session) => {
    const asksForPass = expectations.observed('sessions', key, session);
    if (session) {
      phones.add(key, session.spec.phone);
      if (asksForPass) queue.add(key);
      return;
    }
    const name = key.split('/')[1]!;
    if ([0, 1].some((n) => pods.get(`${deps.config.runnerNamespace}/${runnerName(name, n)}`))) queue.add(key);
    const phone = phones.remove(key);
    // A Session deleted while active frees the phone without an end of its own; one bound to a
    // live Pod leaves its release to the Sessions that ran on it before.
    if (phone !== undefined) enqueuePhone(phone, () => true);
  });
  pods.onChange((key, pod) => {
    const hash = podsByPhone.update(key, pod);
    const asksForPass = expectations.observed('pods', key, pod);
    const owner = podChanged(key, pod);
    if (owner && asksForPass) queue.add(owner);
    // The Sessions bound to a live Pod (its runner's end is theirs), and the phone's waiting ones
    // (a live Pod to take, or one that went).
    const phone = hash === undefined ? undefined : phones.phoneOf(hash);
    if (!phone || !asksForPass) return;
    const podName = key.split('/')[1];
    enqueuePhone(phone, (k) => waiting(k) || (unfinished(k) && sessions.get(k)?.status?.podName === podName));
  });
  // Only a waiting Session reads the workspace (its admission checks and creates it).
  pvcs.onChange((_key, pvc) => {
    const hash = pvc?.metadata?.labels?.[LABEL_PHONE_HASH];
    const phone = hash === undefined ? undefined : phones.phoneOf(hash);
    if (phone) enqueuePhone(phone, waiting);
  });

  // A Service runner Pods dial changed: every waiting Session may now start (or a live Pod's key changed).
  for (const service of informers.services)
    service.onChange(() => {
      for (const key of sessions.list().map(sessionKeyOf)) if (waiting(key)) queue.add(key);
    });

  const { services, ...single } = informers;
  const all = [...Object.values(single), ...services];
  return {
    async start() {
      await Promise.all(all.map((i) => i.start()));
      queue.start();
      deps.logger.info({ namespace: deps.config.namespace, sessions: sessions.list().length }, 'controller started');
    },
    async stop() {
      for (const i of all) i.stop();
      await queue.stop();
    },
    get synced() {
      return all.every((i) => i.synced);
    },
    sessions,
  };
}
