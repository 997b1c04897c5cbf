// Queue admission for one phone, as a pure function of that phone's Sessions. It is where the
// phone-wide effects of the state machine take place: a waiting Session is swept away if a
// sibling ended with ClearPhoneQueue while it waited, and the oldest waiting one is started
// (StartNextQueued) once none is active. Level-based: derived from the Sessions, never memory.
import { endingEffects, isActive, isTerminal, Reason } from '../common/session/state-machine.ts';
import { byArrival } from '../common/session/order.ts';
import type { Session } from '../common/session/schema.ts';
import { CONDITION_ADMITTED, endReason } from './conditions.ts';

export type Admission =
  | { kind: 'run' }
  | { kind: 'wait'; position: number }
  | { kind: 'full'; queued: number }
  | { kind: 'cleared'; by: string };

const created = (s: Session) => new Date(s.metadata.creationTimestamp ?? 0).getTime();

const isFresh = (s: Session) => s.status?.phase === undefined || s.status.phase === 'Queued';

/** Finished Sessions whose end, by the state machine, empties the phone's queue. */
const clearsQueue = (s: Session) =>
  isTerminal(s.status?.phase) && endingEffects(endReason(s)).includes('ClearPhoneQueue');

/** When the Session started waiting: the controller's Queued stamp, else its creation second. */
function queuedSince(s: Session): { at: number; precise: boolean } {
  const queued = s.status?.conditions?.find((c) => c.type === CONDITION_ADMITTED && c.reason === Reason.Queued);
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
  const waiting = all
    .filter((s) => !isTerminal(s.status?.phase) && !isActive(s.status?.phase) && !clearedBy(s, all))
    .sort(byArrival);
  const index = waiting.findIndex((s) => s.metadata.name === session.metadata.name);
  const position = active ? index + 1 : index;
  if (position === 0) return { kind: 'run' };
  if (session.status?.phase === undefined && position > maxQueued) return { kind: 'full', queued: position - 1 };
  return { kind: 'wait', position };
}
