// The order in which a phone's commands arrived. creationTimestamp has whole seconds, so the
// relay stamps each Session with the arrival time in milliseconds (tether.dev/received-at);
// Sessions without the stamp fall back to their creation second. The name breaks ties.
import type { Session } from './schema.ts';

export const ANNOTATION_RECEIVED_AT = 'tether.dev/received-at';

export function arrivedAt(s: Pick<Session, 'metadata'>): number {
  const stamped = Date.parse(s.metadata.annotations?.[ANNOTATION_RECEIVED_AT] ?? '');
  return Number.isNaN(stamped) ? new Date(s.metadata.creationTimestamp ?? 0).getTime() : stamped;
}

/** Sort comparator: earliest arrival first. */
export function byArrival(a: Pick<Session, 'metadata'>, b: Pick<Session, 'metadata'>): number {
  return arrivedAt(a) - arrivedAt(b) || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
}
