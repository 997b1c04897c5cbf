// Session conditions written by the controller (metav1.Condition shape, map-list keyed by type).
import type { Condition, Session } from '../common/session/schema.ts';
import { Reason } from '../common/session/state-machine.ts';

/** False/Queued while waiting for the phone's turn; True/PodCreated once the runner Pod exists. */
export const CONDITION_ADMITTED = 'Admitted';
/**
 * False while the runner Pod is held back (reason as Kubernetes says it: ImagePullBackOff, Unschedulable …);
 * True once the runner works.
 */
export const CONDITION_STARTED = 'Started';
/** True once the Session reached a terminal phase; the reason says how it ended. */
export const CONDITION_FINISHED = 'Finished';

/** Deep equality of JSON values regardless of key order (the API server returns keys sorted). */
export function sameJson(a: unknown, b: unknown): boolean {
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v && typeof v === 'object')
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
      );
    return v;
  };
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

export interface ConditionInput {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** Sets one condition; lastTransitionTime moves only when the status flips. */
export function setCondition(
  list: Condition[] | undefined,
  input: ConditionInput,
  now: Date,
  generation?: number,
): Condition[] {
  const current = list ?? [];
  const existing = current.find((c) => c.type === input.type);
  const next: Condition = {
    ...input,
    lastTransitionTime: existing && existing.status === input.status ? existing.lastTransitionTime : now.toISOString(),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
  if (existing && sameJson(existing, next)) return current;
  return [...current.filter((c) => c.type !== input.type), next];
}

/** How a finished Session ended: its Finished condition, else what its phase says. */
export function endReason(session: Session): string {
  return session.status?.conditions?.find((c) => c.type === CONDITION_FINISHED)?.reason ?? finishedReason(session);
}

/** How a terminal phase came about, when the controller did not see the transition itself. */
export function finishedReason(session: Session): string {
  switch (session.status?.phase) {
    case 'Succeeded':
      return session.status.result?.prUrl ? Reason.Published : Reason.Completed;
    case 'Rejected':
      return Reason.Rejected;
    // The runner writes Cancelled only for "stop" at a cost pause; the user's cancel sets spec.cancel.
    case 'Cancelled':
      return session.spec.cancel ? Reason.Cancelled : Reason.CostStopped;
    case 'TimedOut':
      return Reason.ApprovalTimeout;
    default:
      return Reason.AgentFailed;
  }
}

export function finishedMessage(session: Session): string {
  const result = session.status?.result;
  switch (session.status?.phase) {
    case 'Succeeded':
      return result?.prUrl ? `pull request opened: ${result.prUrl}` : 'finished';
    case 'Rejected':
      return 'changes rejected and reverted';
    case 'Cancelled':
      return session.spec.cancel ? 'cancelled' : 'stopped at its cost pause';
    case 'TimedOut':
      return 'approval expired; changes kept on the workspace';
    default:
      return result?.message ?? 'failed';
  }
}
