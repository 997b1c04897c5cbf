// The keep-alive of runner Pods, as pure functions of the phone's Sessions and Pods: which Sessions
// a Pod is bound to (status.podName), when its last one ended, whether it is live (its runner still
// waiting for the phone's next Session), which one a waiting Session may take, and which idle ones go.
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION_RUNNER_KEY, LABEL_PHONE_HASH, LABEL_WORKSPACE, runnerName } from '../common/session/names.ts';
import type { Session } from '../common/session/schema.ts';
import { isActive, isTerminal } from '../common/session/state-machine.ts';

/** A bind needs this much of the keep-alive left, so it never races the Pod's deletion. */
export const KEEP_ALIVE_MARGIN_MS = 5_000;

/** The runner Pod a Session runs on: the one its status names, else the one made for it. */
export const podOf = (session: Session): string => session.status?.podName ?? runnerName(session.metadata.name!);

/** The Sessions (of `sessions`) bound to the Pod named `pod`. */
export const boundTo = (pod: string, sessions: Session[]): Session[] =>
  sessions.filter((s) => s.status?.podName === pod);

const endedAt = (s: Session) => Date.parse(s.status?.completionTime ?? '') || 0;

/**
 * When the Pod named `pod` was released: its bound Sessions all finished, the time the last one
 * ended; undefined while one is active or none is bound.
 */
export function releasedAt(pod: string, sessions: Session[]): number | undefined {
  const bound = boundTo(pod, sessions);
  if (bound.length === 0 || bound.some((s) => !isTerminal(s.status?.phase))) return undefined;
  return Math.max(...bound.map(endedAt));
}

/** The last Session to end among those bound to the Pod (the one whose end its keep-alive counts from). */
export function lastOnPod(pod: string, sessions: Session[]): Session | undefined {
  const bound = boundTo(pod, sessions);
  if (bound.some((s) => !isTerminal(s.status?.phase))) return undefined;
  return bound.sort(
    (a, b) => endedAt(b) - endedAt(a) || (b.metadata.name ?? '').localeCompare(a.metadata.name ?? ''),
  )[0];
}

/** A Pod whose runner is still there to take a Session: Running, not going, its runner container not ended. */
export function runnerAlive(pod: V1Pod): boolean {
  if (pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Running') return false;
  const runner = pod.status.containerStatuses?.find((c) => c.name === 'runner');
  return runner?.state?.running !== undefined;
}

/** What a waiting Session's bind is checked against: the Pod a new one would be. */
export interface LiveWanted {
  phoneHash: string;
  claim: string;
  key: string;
}

/**
 * A Pod of the phone that may take a waiting Session now: alive, the phone's, the same workspace and
 * runner key, no active Session bound to it, and its keep-alive not about to run out.
 */
export function bindable(pod: V1Pod, wanted: LiveWanted, siblings: Session[], now: Date, keepAliveMs: number): boolean {
  const { labels, annotations, name } = pod.metadata ?? {};
  if (keepAliveMs <= 0 || !runnerAlive(pod) || !name) return false;
  if (labels?.[LABEL_PHONE_HASH] !== wanted.phoneHash || labels?.[LABEL_WORKSPACE] !== wanted.claim) return false;
  if (annotations?.[ANNOTATION_RUNNER_KEY] !== wanted.key) return false;
  const released = releasedAt(name, siblings);
  return released !== undefined && now.getTime() < released + keepAliveMs - KEEP_ALIVE_MARGIN_MS;
}

/** The phone's Pods with a runner still waiting and no active Session: they go before another Pod is made. */
export function idlePods(pods: V1Pod[], siblings: Session[], except?: string): V1Pod[] {
  return pods.filter((pod) => {
    const name = pod.metadata?.name ?? '';
    return name !== except && runnerAlive(pod) && !boundTo(name, siblings).some((s) => isActive(s.status?.phase));
  });
}
