// Why a runner Pod has not started yet, read from what the scheduler and the kubelet report in
// its status: the Kubernetes reason (for the Session's conditions and Events) and the same in
// plain words with what to do next (for the phone when the start deadline passes).
import type { V1Pod } from '@kubernetes/client-node';

export interface StartProblem {
  /** As Kubernetes says it: ErrImagePull, ImagePullBackOff, Unschedulable, ContainerCreating … */
  reason: string;
  /** Kubernetes' own message, for operators. */
  detail: string;
  /** For the user: what went wrong and what to do next. */
  plain: string;
}

const IMAGE_REASONS = [
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'RegistryUnavailable',
];
/**
 * The kubelet still preparing the Pod: pulling the image, mounting volumes, running init containers —
 * no diagnosis by itself.
 */
const GENERIC_WAITS = ['ContainerCreating', 'PodInitializing'];
const AGAIN = 'then send the command again';
const SEND_AGAIN = 'Send the command again; if it keeps happening, ask your operator.';

function plainWords(reason: string, image: string | undefined): string {
  if (IMAGE_REASONS.includes(reason)) {
    const named = image ? ` "${image}"` : '';
    return (
      `the runner image${named} could not be pulled (${reason}). ` +
      `Ask your operator to check the runner image of the Tether install, ${AGAIN}.`
    );
  }
  if (reason === 'Unschedulable') {
    return (
      `no node of the cluster can take the runner (${reason}). ` +
      `Ask your operator to add capacity or lower the runner's resource requests, ${AGAIN}.`
    );
  }
  if (GENERIC_WAITS.includes(reason)) {
    return (
      `the runner was still being prepared when its start deadline passed ` +
      `(${reason}: its image downloading or its workspace volume attaching). ${SEND_AGAIN}`
    );
  }
  if (reason === 'CreateContainerConfigError') {
    return (
      `the runner's settings are incomplete (${reason}, often a missing Secret). ` +
      `Ask your operator to check the install, ${AGAIN}.`
    );
  }
  return `the runner did not start in time (${reason}). ${SEND_AGAIN}`;
}

/** The first thing holding the Pod back, in the order a start goes: scheduling, then each container. */
export function startProblem(pod: V1Pod): StartProblem | undefined {
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False') {
    const reason = scheduled.reason ?? 'Unschedulable';
    return { reason, detail: scheduled.message ?? '', plain: plainWords(reason, undefined) };
  }
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].filter(
    (s) => s.state?.waiting?.reason,
  );
  // A container waiting for its own image is the cause; the others only wait with it.
  const held = statuses.find((s) => !GENERIC_WAITS.includes(s.state!.waiting!.reason!)) ?? statuses[0];
  if (!held) return undefined;
  const { reason, message } = held.state!.waiting!;
  return { reason: reason!, detail: message ?? '', plain: plainWords(reason!, held.image) };
}

/** What the user hears when the deadline passes: the problem seen last, or that the start was slow. */
export function startTimeoutMessage(pod: V1Pod, limit: string): { message: string; problem?: StartProblem } {
  const problem = startProblem(pod);
  if (problem) return { message: problem.plain, problem };
  const pending = pod.status?.phase === 'Pending' || !pod.status?.phase;
  return {
    message: `the runner did not start within ${limit}${pending ? ' (its Pod is still Pending)' : ''}. ${SEND_AGAIN}`,
  };
}
