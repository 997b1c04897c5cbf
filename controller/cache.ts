// What the controller's caches keep of each object: the fields a reconcile pass, the metrics or
// the informer's own bookkeeping read, nothing else. At 10,000 Sessions the runners' progress,
// diffs, summaries and the relay's decisions would otherwise fill most of the heap.
import type { V1Pod } from '@kubernetes/client-node';
import type { Session } from '../common/session/schema.ts';

/** status.result fields read by the controller (end reason and message, exit code, cost metric). */
const RESULT_KEPT = ['message', 'exitCode', 'prUrl', 'costUsd'] as const;
/** status.pending fields read by the controller (approval deadline and wait metric). */
const PENDING_KEPT = ['id', 'kind', 'createdAt'] as const;

function keepOnly<T extends object>(object: T | undefined, keys: readonly string[]): void {
  if (!object) return;
  for (const key of Object.keys(object)) if (!keys.includes(key)) delete (object as Record<string, unknown>)[key];
}

/**
 * A Session as cached: without the runner's progress, the result's texts and media, the
 * pending request's body, and the relay's decisions. The controller writes only the status
 * fields it owns (and result.message/exitCode) as a merge patch, so what it never held is kept.
 */
export function trimSession(session: Session): void {
  delete session.spec?.decisions;
  const status = session.status;
  if (!status) return;
  delete status.progress;
  keepOnly(status.result, RESULT_KEPT);
  keepOnly(status.pending, PENDING_KEPT);
}

/**
 * A runner Pod as cached: identity, labels, annotations, owner, deletion, phase, the runner's end,
 * and what a start held back reads (controller/start.ts: scheduling, each container's wait and image).
 */
export function trimPod(pod: V1Pod): void {
  delete pod.spec;
  if (!pod.status) return;
  keepOnly(pod.status, ['phase', 'reason', 'message', 'conditions', 'containerStatuses', 'initContainerStatuses']);
  if (pod.status.conditions) pod.status.conditions = pod.status.conditions.filter((c) => c.type === 'PodScheduled');
  for (const container of [...(pod.status.containerStatuses ?? []), ...(pod.status.initContainerStatuses ?? [])])
    keepOnly(container, ['name', 'state', 'image']);
}
