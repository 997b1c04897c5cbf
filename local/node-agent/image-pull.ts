// Images on the local node. The node agent runs every container from an image it staged from this
// repository's checkout (image-store.ts), so it "has" only those; a container naming any other
// image fails to pull as on a kubelet: waiting ErrImagePull at each attempt, ImagePullBackOff
// between attempts, retried with a doubling back-off, the Pod Pending meanwhile.
import type { V1Pod } from '@kubernetes/client-node';
import { podContainers } from './pod-process.ts';

/** The names of the runner image the local stack and its tests use (the controller's TETHER_RUNNER_IMAGE there). */
export const LOCAL_IMAGES: readonly string[] = ['tether-runner:local', 'tether-runner:dev', 'tether-runner:test'];

const BACK_OFF_REPORTED_AFTER_MS = 1000;
const FIRST_RETRY_MS = 10_000;
const MAX_RETRY_MS = 300_000;
/** The wait after a pull's n-th failed attempt: doubling from FIRST_RETRY_MS, at most MAX_RETRY_MS. */
const retryAfter = (attempts: number) => Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (attempts - 1));

interface PullState {
  attempts: number;
  attemptAt: number;
  backOffReported: boolean;
  timers: NodeJS.Timeout[];
}

export interface ImagePuller {
  /** True when the node has every image of the Pod; otherwise reports the failed pull and schedules the next look. */
  ready(key: string, pod: V1Pod): Promise<boolean>;
  forget(key: string): void;
  stop(): void;
}

function waitingStatuses(pod: V1Pod, images: readonly string[], reason: string) {
  const sidecars = new Set((pod.spec!.initContainers ?? []).map((c) => c.name));
  const status = (name: string, image: string) => {
    const missing = !images.includes(image);
    const message = !missing
      ? undefined
      : reason === 'ErrImagePull'
        ? `Failed to pull image "${image}": not found (the local node agent has ${images.join(', ')})`
        : `Back-off pulling image "${image}"`;
    const waiting = missing ? { reason, message } : { reason: 'ContainerCreating' };
    return { name, image, imageID: '', ready: false, started: false, restartCount: 0, state: { waiting } };
  };
  const all = podContainers(pod).map((c) => ({ sidecar: sidecars.has(c.name), value: status(c.name, c.image ?? '') }));
  return {
    initContainerStatuses: all.filter((s) => s.sidecar).map((s) => s.value),
    containerStatuses: all.filter((s) => !s.sidecar).map((s) => s.value),
  };
}

export function imagePuller(
  images: readonly string[],
  patchStatus: (pod: V1Pod, status: object) => Promise<unknown>,
  wake: (key: string) => void,
): ImagePuller {
  const pulls = new Map<string, PullState>();
  const report = (pod: V1Pod, reason: string) =>
    patchStatus(pod, {
      phase: 'Pending',
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date().toISOString() },
        { type: 'Ready', status: 'False', reason: 'ContainersNotReady', lastTransitionTime: new Date().toISOString() },
      ],
      ...waitingStatuses(pod, images, reason),
    });
  const forget = (key: string) => {
    for (const timer of pulls.get(key)?.timers ?? []) clearTimeout(timer);
    pulls.delete(key);
  };

  return {
    forget,
    stop: () => [...pulls.keys()].forEach(forget),
    async ready(key, pod) {
      if (podContainers(pod).every((c) => images.includes(c.image ?? ''))) {
        forget(key);
        return true;
      }
      const now = Date.now();
      const state = pulls.get(key);
      if (!state || now >= state.attemptAt + retryAfter(state.attempts)) {
        forget(key);
        const attempts = (state?.attempts ?? 0) + 1;
        const timers = [
          setTimeout(() => wake(key), BACK_OFF_REPORTED_AFTER_MS),
          setTimeout(() => wake(key), retryAfter(attempts)),
        ];
        pulls.set(key, { attempts, attemptAt: now, backOffReported: false, timers });
        await report(pod, 'ErrImagePull');
      } else if (!state.backOffReported && now >= state.attemptAt + BACK_OFF_REPORTED_AFTER_MS) {
        state.backOffReported = true;
        await report(pod, 'ImagePullBackOff');
      }
      return false;
    },
  };
}
