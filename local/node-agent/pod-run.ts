// One Pod on the local node: every container a process tree of its own (sidecars first), its
// status reported as a kubelet would, the Pod finished when its regular containers have exited.
import type { KubeConfig, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { dirname, join } from 'node:path';
import type pino from 'pino';
import { freePort } from '../control-plane/control-plane.ts';
import { startManaged, type Managed } from '../control-plane/processes.ts';
import type { IdRange } from './id-ranges.ts';
import { podIdRange } from './identity.ts';
import { mountView, mountViewCommand } from './mount-view.ts';
import { carriedPorts, usesEgressProxy } from './carried-ports.ts';
import { openPodNetwork, type PodNetwork } from './pod-network.ts';
import {
  containerProcess,
  materializeVolumes,
  podContainers,
  podDir,
  type LocalProcessSpec,
  type NodeLayout,
} from './pod-process.ts';

export interface PodRunDeps {
  kubeConfig: KubeConfig;
  layout: NodeLayout;
  logger: pino.Logger;
  env: Record<string, string>;
  onOutput?: (line: string) => void;
  patchStatus: (status: object) => Promise<unknown>;
}

export interface PodRun {
  /** The container's process (the first regular container when no name is given). */
  process(container?: string): Managed | undefined;
  /** SIGTERM to the regular containers, then the sidecars; SIGKILL after the grace period. */
  stop(graceMs: number): Promise<void>;
  /** Resolves once the Running phase and then the final phase are reported. */
  finished: Promise<void>;
}

const now = () => new Date().toISOString();

interface Running {
  spec: LocalProcessSpec;
  proc: Managed;
  sidecar: boolean;
  startedAt: string;
  state: object;
}

function statuses(pod: V1Pod, running: Running[], sidecars: boolean): V1ContainerStatus[] {
  return running
    .filter((r) => r.sidecar === sidecars)
    .map((r) => {
      const container = podContainers(pod).find((c) => c.name === r.spec.container)!;
      const ready = 'running' in r.state;
      return {
        name: r.spec.container,
        image: container.image ?? 'local',
        imageID: 'local',
        ready,
        started: ready,
        restartCount: 0,
        state: r.state,
      } as V1ContainerStatus;
    });
}

async function startError(deps: PodRunDeps, pod: V1Pod, error: Error): Promise<void> {
  const terminated = { terminated: { exitCode: 128, reason: 'StartError', message: error.message, finishedAt: now() } };
  const containerStatuses = pod.spec!.containers.map((c) => ({
    name: c.name,
    image: c.image ?? 'local',
    imageID: 'local',
    ready: false,
    restartCount: 0,
    state: terminated,
  }));
  await deps.patchStatus({ phase: 'Failed', message: error.message, containerStatuses });
}

/** The env variable naming the port the supervisor's model endpoint listens on, carried into the agent's network. */
export const MODEL_PORT_ENV = 'TETHER_MODEL_PORT';

interface IsolatedNetwork {
  network: PodNetwork;
  /** The containers in the namespace: all of the Pod's, or (without the egress proxy) the isolated ones. */
  members: string[];
  /** Without the egress proxy: the supervisor's model port, carried to the isolated containers. */
  modelPort?: number;
}

/**
 * The Pod's own network namespace when the node isolates one of its containers (root, containers as users). With the
 * egress proxy every container joins it, reaching what the runner NetworkPolicy allows; without, the supervisor needs
 * the forge and the model directly, so it stays on the host's network and only its model port is carried in.
 */
async function openNetwork(
  deps: PodRunDeps,
  pod: V1Pod,
  specs: LocalProcessSpec[],
  range: IdRange | undefined,
): Promise<IsolatedNetwork | undefined> {
  const wanted = deps.layout.isolatedNetwork;
  if (!wanted || !range || !specs.some((s) => wanted.containers.includes(s.container))) return undefined;
  const logFile = join(podDir(deps.layout, pod), 'network.log');
  if (usesEgressProxy(specs)) {
    const network = await openPodNetwork(pod, carriedPorts(specs, deps.layout.server), logFile);
    return { network, members: specs.map((s) => s.container) };
  }
  const modelPort = await freePort();
  const network = await openPodNetwork(pod, [{ host: '127.0.0.1', port: modelPort }], logFile);
  return { network, members: wanted.containers, modelPort };
}

/** What an isolated container needs under the folders its mount view hides: the node's state, the images. */
function neededPaths(layout: NodeLayout): string[] {
  const images = Object.values(layout.images).flatMap((image) => [image.app, dirname(image.node), image.compileCache]);
  return [layout.stateDir, ...images];
}

/**
 * Each container's place: the Pod's network namespace for its members, with a mount view hiding the host's socket
 * folders for the isolated ones; a container left on the host's network gets the model port.
 */
function placeOf(
  layout: NodeLayout,
  spec: LocalProcessSpec,
  isolated: IsolatedNetwork | undefined,
): { netns?: string; mountView?: string[] } {
  if (!isolated) return {};
  if (!isolated.members.includes(spec.container)) {
    if (isolated.modelPort !== undefined) spec.env[MODEL_PORT_ENV] = String(isolated.modelPort);
    return {};
  }
  if (!layout.isolatedNetwork!.containers.includes(spec.container)) return { netns: isolated.network.path };
  return { netns: isolated.network.path, mountView: mountViewCommand(mountView(neededPaths(layout))) };
}

/** Starts the Pod's containers; undefined when they could not be prepared (the Pod is reported Failed). */
export async function runPod(deps: PodRunDeps, key: string, pod: V1Pod): Promise<PodRun | undefined> {
  const sidecarNames = new Set((pod.spec!.initContainers ?? []).map((c) => c.name));
  let specs: LocalProcessSpec[];
  let secretVolumes: { stop(): void } | undefined;
  let isolated: IsolatedNetwork | undefined;
  try {
    const range = podIdRange(deps.layout.stateDir, pod, deps.layout.runAsUsers ?? false);
    secretVolumes = await materializeVolumes(deps.kubeConfig, deps.layout, pod, range, deps.logger);
    specs = await Promise.all(
      podContainers(pod).map((c) => containerProcess(deps.kubeConfig, deps.layout, pod, c, deps.env, range)),
    );
    isolated = await openNetwork(deps, pod, specs, range);
  } catch (error) {
    secretVolumes?.stop();
    deps.logger.error({ err: error, pod: key }, 'cannot start pod');
    await startError(deps, pod, error as Error);
    return undefined;
  }
  const dir = podDir(deps.layout, pod);
  const startedAt = now();
  const running: Running[] = specs.map((spec) => ({
    spec,
    sidecar: sidecarNames.has(spec.container),
    startedAt,
    state: { running: { startedAt } },
    proc: startManaged(`${key}/${spec.container}`, spec.command, spec.args, join(dir, `${spec.container}.log`), {
      env: spec.env,
      cwd: spec.cwd,
      group: true,
      user: spec.user,
      ...placeOf(deps.layout, spec, isolated),
      onLine: deps.onOutput,
    }),
  }));
  deps.logger.info(
    {
      pod: key,
      containers: running.map((r) => ({ name: r.spec.container, pid: r.proc.child.pid, uid: r.spec.user?.uid })),
      ...(isolated ? { network: isolated.network.name, members: isolated.members, modelPort: isolated.modelPort } : {}),
    },
    'pod processes started',
  );
  const report = (extra: object = {}) =>
    deps.patchStatus({
      containerStatuses: statuses(pod, running, false),
      initContainerStatuses: statuses(pod, running, true),
      ...extra,
    });
  const exitOf = async (r: Running) => {
    const code = await r.proc.exited;
    const signal = r.proc.child.signalCode;
    const exitCode = code ?? (signal === 'SIGKILL' ? 137 : 143);
    r.state = {
      terminated: {
        exitCode,
        reason: exitCode === 0 ? 'Completed' : 'Error',
        startedAt: r.startedAt,
        finishedAt: now(),
      },
    };
    deps.logger.info({ pod: key, container: r.spec.container, exitCode, signal }, 'container exited');
    return exitCode;
  };
  const regular = running.filter((r) => !r.sidecar);
  const sidecars = running.filter((r) => r.sidecar);
  const sidecarExits = sidecars.map(exitOf);
  // The run is returned at once, its Running report in flight: whoever stops the node meanwhile can stop it.
  const finished = (async () => {
    await report({
      phase: 'Running',
      hostIP: '127.0.0.1',
      podIP: '127.0.0.1',
      startTime: startedAt,
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: startedAt }],
    });
    const codes = await Promise.all(regular.map(exitOf));
    await Promise.all(sidecars.map((s) => s.proc.stop(5000)));
    await Promise.all(sidecarExits);
    secretVolumes.stop();
    await isolated?.network.close();
    await report({
      phase: codes.every((c) => c === 0) ? 'Succeeded' : 'Failed',
      conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: now(), reason: 'PodCompleted' }],
    });
  })();

  return {
    process: (name) => (name ? running.find((r) => r.spec.container === name) : regular[0])?.proc,
    async stop(graceMs) {
      const deadline = Date.now() + graceMs;
      await Promise.all(regular.map((r) => r.proc.stop(graceMs)));
      await Promise.all(sidecars.map((r) => r.proc.stop(Math.max(0, deadline - Date.now()))));
    },
    finished,
  };
}
