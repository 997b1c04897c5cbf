// Test helpers for the controller: an in-process controller on a test namespace, Sessions
// as the relay writes them, and a stand-in for the kubelet and the runner.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { isNotFound } from '../../common/kube/errors.ts';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { LABEL_PHONE_HASH, runnerName, sessionName, workspaceName } from '../../common/session/names.ts';
import type { Session, SessionSpec, SessionStatus } from '../../common/session/schema.ts';
import type { ClusterOps } from '../../controller/cluster.ts';
import { loadConfig, type ControllerConfig } from '../../controller/config.ts';
import { createController, type Controller } from '../../controller/controller.ts';
import { createMetrics, type ControllerMetrics } from '../../controller/metrics.ts';
import { createPassLog, type PassLog } from './passes.ts';
import { adminKubeConfig, createNamespace, deleteNamespace, installSessionCrd, sessionClient } from './cluster.ts';
import { TEST_PHONE_HASH_KEY } from './phone-hash.ts';
import { testPhoneHash } from './phone-hash.ts';

export const testLogger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

export function testConfig(namespace: string, env: Record<string, string> = {}): ControllerConfig {
  return loadConfig({
    TETHER_NAMESPACE: namespace,
    TETHER_METRICS_PORT: '0',
    TETHER_LEADER_ELECTION: 'false',
    TETHER_RUNNER_IMAGE: 'tether-runner:test',
    TETHER_POD_TTL: '1s',
    TETHER_CONCURRENCY: '8',
    TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
    ...env,
  });
}

export interface RunningController {
  controller: Controller;
  metrics: ControllerMetrics;
  /** Its reconcile passes, for level-based waits (./passes.ts). */
  passes: PassLog;
  stop(): Promise<void>;
}

export async function startController(
  kc: KubeConfig,
  config: ControllerConfig,
  ops?: ClusterOps,
): Promise<RunningController> {
  const holder: { controller?: Controller } = {};
  const metrics = createMetrics(() => holder.controller?.sessions.list() ?? [], {
    defaultMetrics: false,
    timeouts: config,
  });
  const passes = createPassLog((key) => holder.controller?.sessions.get(key));
  const running = createController({
    kubeConfig: connectionFromKubeConfig(kc),
    config,
    logger: testLogger,
    metrics: { ...metrics, queueHooks: passes.hooks(metrics.queueHooks) },
    ops,
  });
  holder.controller = running;
  await running.start();
  return { controller: running, metrics, passes, stop: () => running.stop() };
}

let counter = 0;

/** Creates a Session as the relay does; names sort in creation order within a test. */
export async function createSession(
  sessions: SessionClient,
  namespace: string,
  phone: string,
  spec: Partial<SessionSpec> = {},
  labels: Record<string, string> = {},
): Promise<string> {
  const name = sessionName(testPhoneHash(phone), new Date(), (counter++).toString(36).padStart(4, '0'));
  await sessions.create(
    namespace,
    name,
    {
      phone,
      prompt: 'script:\nprogress: hello',
      repo: { url: 'https://github.com/acme/web.git' },
      workspace: workspaceName(testPhoneHash(phone)),
      ...spec,
    },
    { labels: { [LABEL_PHONE_HASH]: testPhoneHash(phone), ...labels } },
  );
  return name;
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The kubelet's part: report the runner Pod's phase (and the runner's exit code). */
export async function setPodPhase(
  kc: KubeConfig,
  namespace: string,
  session: string,
  phase: 'Running' | 'Succeeded' | 'Failed',
  exitCode?: number,
): Promise<V1Pod> {
  const core = kc.makeApiClient(CoreV1Api);
  const now = new Date().toISOString();
  const state =
    phase === 'Running'
      ? { running: { startedAt: now } }
      : {
          terminated: {
            exitCode: exitCode ?? (phase === 'Succeeded' ? 0 : 1),
            reason: phase === 'Succeeded' ? 'Completed' : 'Error',
            startedAt: now,
            finishedAt: now,
          },
        };
  const body = {
    status: {
      phase,
      containerStatuses: [
        {
          name: 'runner',
          image: 'tether-runner:test',
          imageID: '',
          ready: phase === 'Running',
          restartCount: 0,
          state,
        },
      ],
    },
  };
  return core.patchNamespacedPodStatus({ namespace, name: runnerName(session), body }, mergePatch);
}

/** The runner's part: write its status fields as the runner would. */
export async function runnerWrites(
  sessions: SessionClient,
  namespace: string,
  session: string,
  status: Partial<SessionStatus>,
): Promise<Session> {
  return sessions.patchStatus(namespace, session, status);
}

/** The Session's runner Pod; undefined only when the API server says NotFound (any other error throws). */
export async function podOf(kc: KubeConfig, namespace: string, session: string): Promise<V1Pod | undefined> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    return await core.readNamespacedPod({ namespace, name: runnerName(session) });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/**
 * Reconcile passes so far (all results) and informer restarts (each relists: a pass per Session), from the controller's
 * own metrics.
 */
export async function reconcilePasses(
  metrics: ControllerMetrics,
): Promise<{ total: number; errors: number; watchRestarts: number }> {
  const { values } = await metrics.registry.getSingleMetric('tether_reconcile_total')!.get();
  const sum = (keep: (result: string) => boolean) =>
    values.filter((v) => keep(String(v.labels.result))).reduce((n, v) => n + v.value, 0);
  const restarts = (await metrics.registry.getSingleMetric('tether_watch_restarts_total')!.get()).values.reduce(
    (n, v) => n + v.value,
    0,
  );
  return { total: sum(() => true), errors: sum((r) => r === 'error'), watchRestarts: restarts };
}

export async function runnerPods(kc: KubeConfig, namespace: string): Promise<string[]> {
  const core = kc.makeApiClient(CoreV1Api);
  const list = await core.listNamespacedPod({ namespace, labelSelector: 'app.kubernetes.io/component=runner' });
  return list.items
    .filter((p) => !p.metadata?.deletionTimestamp)
    .map((p) => p.metadata!.name!)
    .sort();
}

export const phaseOf = async (sessions: SessionClient, namespace: string, name: string) =>
  (await sessions.get(namespace, name))?.status?.phase;

export interface ControllerSuite {
  kc: KubeConfig;
  /** The Sessions' namespace. */
  ns: string;
  /** The runner namespace: runner Pods, workspaces, runner ServiceAccounts. */
  runners: string;
  sessions: SessionClient;
  running: RunningController;
  /** The suite's controller configuration (more variables over it). */
  config(env?: Record<string, string>): ControllerConfig;
}

/** beforeAll/afterAll for a test file: CRD, fresh Session and runner namespaces, and a controller on them. */
export function controllerSuite(
  prefix: string,
  env: Record<string, string> = {},
  prepare?: (kc: KubeConfig, ns: string) => Promise<void>,
): ControllerSuite {
  const suite = {} as ControllerSuite;
  beforeAll(async () => {
    suite.kc = adminKubeConfig();
    await installSessionCrd(suite.kc);
    [suite.ns, suite.runners] = await Promise.all([
      createNamespace(suite.kc, prefix),
      createNamespace(suite.kc, `${prefix}-run`),
    ]);
    suite.sessions = sessionClient(suite.kc);
    suite.config = (more = {}) => testConfig(suite.ns, { TETHER_RUNNER_NAMESPACE: suite.runners, ...env, ...more });
    await prepare?.(suite.kc, suite.ns);
    suite.running = await startController(suite.kc, suite.config());
  });
  afterAll(async () => {
    await suite.running?.stop();
    await Promise.all([deleteNamespace(suite.kc, suite.ns), deleteNamespace(suite.kc, suite.runners)]);
  });
  return suite;
}
