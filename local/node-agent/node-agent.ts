// A local stand-in for a kubelet (dev and test tool): registers a Node, binds unscheduled
// Pods to it, fails to pull images it does not have (image-pull.ts), runs each of a Pod's
// containers as a local process tree under the container's own user (pod-run.ts, identity.ts),
// reports Pod phase and container states, and honours deletion with SIGTERM → grace → SIGKILL.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type pino from 'pino';
import { isNotFound } from '../../common/kube/errors.ts';
import { createInformer, type Informer } from '../../common/kube/informer.ts';
import { hostEnv } from '../config.ts';
import type { Managed } from '../control-plane/processes.ts';
import { canSwitchUser } from './identity.ts';
import { imagePuller } from './image-pull.ts';
import type { NodeLayout } from './pod-process.ts';
import { removeLeftNetworks } from './pod-network.ts';
import { runPod, type PodRun } from './pod-run.ts';

export interface NodeAgentOptions extends NodeLayout {
  kubeConfig: KubeConfig;
  logger: pino.Logger;
  nodeName?: string;
  /** Only run Pods of this namespace (default: all namespaces). */
  namespace?: string;
  /** Extra environment for every process (PATH is always passed). */
  env?: Record<string, string>;
  /** Called with each output line of a Pod's process. */
  onPodOutput?: (pod: string, line: string) => void;
}

export interface NodeAgent {
  nodeName: string;
  stop(): Promise<void>;
  /** The local process of a Pod's container (namespace/name; the first regular container by default), if it runs. */
  processOf(key: string, container?: string): Managed | undefined;
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const now = () => new Date().toISOString();

export async function startNodeAgent(options: NodeAgentOptions): Promise<NodeAgent> {
  const { kubeConfig: kc, logger } = options;
  const nodeName = options.nodeName ?? 'tether-local';
  const core = kc.makeApiClient(CoreV1Api);
  const running = new Map<string, PodRun>();
  const busy = new Set<string>();
  const startedHere = new Set<string>(); // pod uids this agent has run
  const starting = new Set<Promise<void>>(); // starts still preparing their pod
  let stopping = false;
  const baseEnv = { PATH: hostEnv().PATH, ...options.env };

  if (options.runAsUsers && !canSwitchUser())
    logger.warn(
      'the local node agent is not root: every container runs as its user, ' +
        'without the per-container isolation a cluster gives',
    );
  await prepareNetworks(options);
  await registerNode(core, nodeName);
  const heartbeat = setInterval(
    () => void markNodeReady(core, nodeName).catch((e) => logger.warn({ err: e }, 'node heartbeat failed')),
    20_000,
  );

  const patchStatus = (pod: V1Pod, status: object) =>
    core.patchNamespacedPodStatus(
      { name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, body: { status } },
      mergePatch,
    );

  const puller = imagePuller(Object.keys(options.images), patchStatus, (key) => reconcile(key));

  async function start(key: string, pod: V1Pod) {
    if (stopping) return;
    startedHere.add(pod.metadata!.uid!);
    const started = startRun(key, pod);
    starting.add(started);
    await started.finally(() => starting.delete(started));
  }

  async function startRun(key: string, pod: V1Pod) {
    const run = await runPod(
      {
        kubeConfig: kc,
        layout: options,
        logger,
        env: baseEnv,
        onOutput: (line) => options.onPodOutput?.(key, line),
        patchStatus: (status) => patchStatus(pod, status),
      },
      key,
      pod,
    );
    if (!run) return;
    running.set(key, run);
    void reported(run)
      .catch((error) => {
        // While stopping, stop() says once what it could not report.
        if (!stopping) logger.error({ err: error, pod: key }, 'reporting pod status failed');
      })
      .finally(() => {
        running.delete(key);
        if (!stopping) reconcile(key);
      });
  }

  /** Stops every pod and waits for their exits to be reported; says once which the API server did not take. */
  async function stopPods() {
    await Promise.allSettled(starting);
    const runs = [...running.entries()];
    await Promise.all(runs.map(([, run]) => run.stop(5000)));
    const outcomes = await Promise.allSettled(runs.map(([, run]) => reported(run)));
    const failed = outcomes.flatMap((outcome, i) =>
      outcome.status === 'rejected' ? [{ pod: runs[i]![0], err: outcome.reason as Error }] : [],
    );
    if (failed.length) {
      logger.info(
        { pods: failed.map((f) => f.pod), reason: failed[0]!.err.message },
        `stopping: the exit of ${failed.length} pod(s) was not reported (the API server did not answer); ` +
          'they stay as last reported',
      );
    }
  }

  async function terminate(key: string, pod: V1Pod) {
    const run = running.get(key);
    if (run) {
      const grace = (pod.metadata!.deletionGracePeriodSeconds ?? pod.spec!.terminationGracePeriodSeconds ?? 30) * 1000;
      logger.info({ pod: key, graceMs: grace }, 'stopping pod processes');
      await run.stop(grace);
    }
    await core
      .deleteNamespacedPod({ name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, gracePeriodSeconds: 0 })
      .catch((e) => {
        if (!isNotFound(e)) throw e;
      });
  }

  async function handle(key: string, pod: V1Pod | undefined) {
    if (!pod || pod.metadata?.deletionTimestamp) puller.forget(key);
    if (!pod) {
      await running.get(key)?.stop(0);
      return;
    }
    if (pod.spec?.nodeName && pod.spec.nodeName !== nodeName) return;
    if (pod.metadata?.deletionTimestamp) return terminate(key, pod);
    if (!pod.spec?.nodeName) {
      await core.createNamespacedPodBinding({
        name: pod.metadata!.name!,
        namespace: pod.metadata!.namespace!,
        body: { metadata: { name: pod.metadata!.name! }, target: { apiVersion: 'v1', kind: 'Node', name: nodeName } },
      });
      return;
    }
    const phase = pod.status?.phase;
    if (running.has(key) || startedHere.has(pod.metadata!.uid!) || phase === 'Succeeded' || phase === 'Failed') return;
    if (phase === 'Running') {
      // Bound here and reported running, but no process: this agent restarted underneath it.
      await patchStatus(pod, {
        phase: 'Failed',
        reason: 'NodeAgentRestarted',
        message: 'the local node agent restarted while the pod ran',
      });
      return;
    }
    if (await puller.ready(key, pod)) await start(key, pod);
  }

  // One handler run per pod at a time; a change that arrives meanwhile is handled after it.
  const again = new Set<string>();
  const informer: Informer<V1Pod> = createInformer<V1Pod>({
    kube: connectionFromKubeConfig(kc),
    path: options.namespace ? `/api/v1/namespaces/${options.namespace}/pods` : '/api/v1/pods',
    logger: logger.child({ informer: 'pods' }),
  });
  function reconcile(key: string) {
    if (busy.has(key)) {
      again.add(key);
      return;
    }
    busy.add(key);
    void handle(key, informer.get(key))
      .catch((error) => logger.error({ err: error, pod: key }, 'node agent pod handling failed'))
      .finally(() => {
        busy.delete(key);
        if (again.delete(key)) reconcile(key);
      });
  }

  informer.onChange((key) => reconcile(key));
  await informer.start();

  return {
    nodeName,
    processOf: (key, container) => running.get(key)?.process(container),
    async stop() {
      stopping = true;
      clearInterval(heartbeat);
      puller.stop();
      informer.stop();
      await stopPods();
    },
  };
}

/** As root: what dead node agents left is removed. Otherwise: says loudly that the agents' egress is open. */
async function prepareNetworks(options: NodeAgentOptions): Promise<void> {
  if (!options.isolatedNetwork) return;
  if (options.runAsUsers && canSwitchUser()) return removeLeftNetworks(options.logger);
  options.logger.warn(
    { containers: options.isolatedNetwork.containers },
    'EGRESS NOT ENFORCED: the local node agent is not root, so it cannot give these containers a network ' +
      'namespace of their own; their processes reach everything this machine reaches, the egress proxy only ' +
      'when they choose to use it',
  );
}

/** The pod's exit, reported (a pod deleted meanwhile needs no report). */
const reported = (run: PodRun) =>
  run.finished.catch((e: unknown) => {
    if (!isNotFound(e)) throw e;
  });

async function registerNode(core: CoreV1Api, name: string) {
  try {
    await core.createNode({
      body: { metadata: { name, labels: { 'kubernetes.io/hostname': name, 'tether.dev/local': 'true' } } },
    });
  } catch (error) {
    if ((error as { code?: number }).code !== 409) throw error;
  }
  await markNodeReady(core, name);
}

async function markNodeReady(core: CoreV1Api, name: string) {
  const at = now();
  await core.patchNodeStatus(
    {
      name,
      body: {
        status: {
          capacity: { cpu: '2', memory: '8Gi', pods: '110' },
          allocatable: { cpu: '2', memory: '8Gi', pods: '110' },
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'LocalNodeAgent',
              message: 'local node agent is running',
              lastHeartbeatTime: at,
              lastTransitionTime: at,
            },
          ],
          addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
        },
      },
    },
    mergePatch,
  );
}
