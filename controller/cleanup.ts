// The pure decide step of a pass over a finished Session: what its end still asks of the
// controller (the effects read back from the state machine) and what the history limits remove.
import type { V1Pod } from '@kubernetes/client-node';
import type { Session } from '../common/session/schema.ts';
import { endingEffects, isTerminal, Reason, type Effect } from '../common/session/state-machine.ts';
import type { ControllerConfig } from './config.ts';
import { endReason } from './conditions.ts';
import { lastOnPod, runnerAlive } from './live-pod.ts';

/** Ends the controller decides while the runner may still run: its Pod is stopped at once. */
const CONTROLLER_ENDINGS: readonly string[] = [
  Reason.Cancelled,
  Reason.QueueCleared,
  Reason.ApprovalTimeout,
  Reason.RunTimeout,
  Reason.StartTimeout,
  Reason.PodLost,
];
/** Of those, the ends whose runner Pod is stopped even when its runner could wait live (a stuck or lost run). */
const STOPPING_ENDINGS: readonly string[] = [Reason.RunTimeout, Reason.StartTimeout, Reason.PodLost];

export interface Cleanup {
  /** The end's controller effects still due: DeletePod once its time has come, and the phone-wide ones. */
  effects: Effect[];
  /** Finished Sessions of the phone (this one included or not) beyond the history limits. */
  deleteSessions: string[];
  requeueAfterMs?: number;
}

type Retention = Pick<ControllerConfig, 'podTtlMs' | 'keepAliveMs' | 'historyCount' | 'historyMaxAgeMs'>;

/**
 * How long a Session that spent money is kept past the history limits: the phone's daily budget
 * sums the Sessions that ended on the budget day, which is at most 25 h long (a DST change).
 */
export const SPEND_HELD_MS = 25 * 3_600_000;

const completedAt = (s: Session) =>
  Date.parse(s.status?.completionTime ?? s.metadata.creationTimestamp?.toString() ?? '0');

/** A Pod whose runner, alive, waits for the phone's next Session after an end of this reason. */
export const keptLive = (reason: string, pod: V1Pod | undefined, keepAliveMs: number) =>
  keepAliveMs > 0 && pod !== undefined && runnerAlive(pod) && !STOPPING_ENDINGS.includes(reason);

/**
 * DeletePod of an end, by the last Session bound to the Pod (an active one, or one that ended later,
 * holds it): a Pod the controller stopped goes at once; a runner still there waits live for the keep-alive
 * (a later Session may be bound to it meanwhile); any other Pod goes after the TTL (logs stay readable).
 * A Pod the status never named was made by an admission whose status write failed (the Session ended
 * or changed meanwhile): no runner of it ever started, so it goes at once.
 */
function podDue(
  session: Session,
  pod: V1Pod | undefined,
  siblings: Session[],
  now: Date,
  config: Retention,
): { now: boolean; at?: number } {
  if (!pod || pod.metadata?.deletionTimestamp) return { now: false };
  if (!session.status?.podName) return { now: true };
  const mates = [...siblings.filter((s) => s.metadata.name !== session.metadata.name), session];
  if (lastOnPod(pod.metadata!.name!, mates) !== session) return { now: false };
  const running = pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
  const live = keptLive(endReason(session), pod, config.keepAliveMs);
  if (running && !live && CONTROLLER_ENDINGS.includes(endReason(session))) return { now: true };
  const kept = live ? config.keepAliveMs : config.podTtlMs;
  const expires = completedAt(session) + kept;
  return now.getTime() >= expires ? { now: true } : { now: false, at: expires };
}

/** Until when a Session counts toward its phone's daily budget: removing it earlier would erase spend. */
function spendHeldUntil(s: Session): number {
  const usd = s.status?.result?.costUsd;
  return typeof usd === 'number' && usd > 0 ? completedAt(s) + SPEND_HELD_MS : -Infinity;
}

/**
 * Clean-up of a finished Session. Per phone, the newest `historyCount` finished Sessions
 * younger than `historyMaxAgeMs` are kept, and beyond both any that spent money in the last
 * SPEND_HELD_MS; each pass removes the other ones beyond the count and itself once too old (what
 * they own goes with them through owner references).
 */
export function decideTerminal(
  session: Session,
  pod: V1Pod | undefined,
  siblings: Session[],
  now: Date,
  config: Retention,
): Cleanup {
  const ending = endingEffects(endReason(session));
  const waits: number[] = [];
  const effects: Effect[] = ending.filter((e) => e === 'ClearPhoneQueue' || e === 'StartNextQueued');
  if (ending.includes('DeletePod') || (pod && !session.status?.podName)) {
    const due = podDue(session, pod, siblings, now, config);
    if (due.now) effects.push('DeletePod');
    if (due.at !== undefined) waits.push(due.at);
  }
  const finished = [
    ...siblings.filter((s) => s.metadata.name !== session.metadata.name && isTerminal(s.status?.phase)),
    session,
  ].sort((a, b) => completedAt(b) - completedAt(a) || (b.metadata.name ?? '').localeCompare(a.metadata.name ?? ''));
  const beyond = finished.slice(config.historyCount);
  const deleteSessions = beyond.filter((s) => now.getTime() >= spendHeldUntil(s)).map((s) => s.metadata.name!);
  const self = session.metadata.name!;
  const held = spendHeldUntil(session);
  const expires = Math.max(completedAt(session) + config.historyMaxAgeMs, held);
  if (beyond.includes(session)) {
    if (!deleteSessions.includes(self)) waits.push(held);
  } else if (now.getTime() >= expires) deleteSessions.push(self);
  else waits.push(expires);
  const next = Math.min(...waits);
  return {
    effects,
    deleteSessions,
    ...(Number.isFinite(next) ? { requeueAfterMs: Math.max(1, next - now.getTime()) } : {}),
  };
}
