// Queue admission for one phone, as a pure function of that phone's Sessions.
// Level-based: whether a waiting Session runs, waits, overflows or was swept away by a
// cancel/reject/timeout is derived from the Sessions themselves, never from memory.
import { isActive, isTerminal } from '../common/session/state-machine.ts';
import { byArrival } from '../common/session/order.ts';
import type { Session } from '../common/session/schema.ts';
import { CONDITION_ADMITTED } from './conditions.ts';

export type Admission =
  | { kind: 'run' }
  | { kind: 'wait'; position: number }
  | { kind: 'full'; queued: number }
  | { kind: 'cleared'; by: string };

const created = (s: Session) => new Date(s.metadata.creationTimestamp ?? 0).getTime();

/** Arrival order of the phone's commands (see common/session/order.ts). */
export const byCreation = byArrival;

const isFresh = (s: Session) => s.status?.phase === undefined || s.status.phase === 'Queued';

/** Terminal Sessions whose end empties the phone's queue: reject, approval timeout, a user's cancel. */
function clearsQueue(s: Session): boolean {
  const phase = s.status?.phase;
  return phase === 'Rejected' || phase === 'TimedOut' || (phase === 'Cancelled' && s.spec.cancel === true);
}

/** When the Session started waiting: the controller's Queued stamp, else its creation second. */
function queuedSince(s: Session): { at: number; precise: boolean } {
  const queued = s.status?.conditions?.find((c) => c.type === CONDITION_ADMITTED && c.reason === 'Queued');
  if (s.status?.phase === 'Queued' && queued) return { at: Date.parse(queued.lastTransitionTime), precise: true };
  return { at: created(s), precise: false };
}

/** The Session (if any) whose cancel/reject/timeout swept this waiting Session away. */
export function clearedBy(session: Session, siblings: Session[]): string | undefined {
  if (!isFresh(session)) return undefined;
  const since = queuedSince(session);
  for (const other of siblings) {
    if (other.metadata.name === session.metadata.name || !clearsQueue(other) || !other.status?.completionTime) continue;
    const ended = Date.parse(other.status.completionTime);
    // creationTimestamp has whole seconds: only an earlier second proves it was waiting.
    const waiting = since.precise ? since.at <= ended : since.at < Math.floor(ended / 1000) * 1000;
    if (waiting) return other.metadata.name;
  }
  return undefined;
}

/**
 * One active Session per phone; the rest wait in creation order, at most `maxQueued`.
 * `siblings` are all Sessions of the phone (this one included or not).
 */
export function admit(session: Session, siblings: Session[], maxQueued: number): Admission {
  const others = siblings.filter((s) => s.metadata.name !== session.metadata.name);
  const all = [...others, session];
  const by = clearedBy(session, all);
  if (by) return { kind: 'cleared', by };
  const active = others.some((s) => isActive(s.status?.phase));
  const waiting = all.filter((s) => !isTerminal(s.status?.phase) && !isActive(s.status?.phase) && !clearedBy(s, all)).sort(byCreation);
  const index = waiting.findIndex((s) => s.metadata.name === session.metadata.name);
  const position = active ? index + 1 : index;
  if (position === 0) return { kind: 'run' };
  if (session.status?.phase === undefined && position > maxQueued) return { kind: 'full', queued: position - 1 };
  return { kind: 'wait', position };
}
