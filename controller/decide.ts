// The pure decide step of a reconcile pass over an unfinished Session: from the Session and
// what the caches show, the transition to take (its effects included, from the state
// machine) and when to look again. reconcile.ts performs the effects. Timestamps come from status.
import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { parseDuration } from '../common/session/display.ts';
import { LABEL_PHONE_HASH, workspaceName } from '../common/session/names.ts';
import type { PhoneHash } from '../common/session/phone-hash.ts';
import { repoProblem } from '../common/session/repo.ts';
import type { Session } from '../common/session/schema.ts';
import { transition, type Event, type Step } from '../common/session/state-machine.ts';
import { spentToday, usd, withinDailyBudget } from '../common/session/budget.ts';
import { admit } from './admission.ts';
import type { ControllerConfig } from './config.ts';
import { startProblem, startTimeoutMessage, type StartProblem } from './start.ts';
import { phoneHashes, workspaceRepo } from './workspace-claim.ts';
import { bindable, idlePods, podOf, type LiveWanted } from './live-pod.ts';

export type Timeouts = Pick<ControllerConfig, 'defaultRunTimeoutMs' | 'defaultApprovalTimeoutMs' | 'startTimeoutMs'>;
type DecideConfig = Timeouts &
  Pick<ControllerConfig, 'maxQueued' | 'repoHosts' | 'budget' | 'phoneHash' | 'keepAliveMs'>;

export interface Observed {
  /** Every Session of the same phone, this one included or not. */
  siblings: Session[];
  /** The runner Pod as last seen (for an active Session, read from the API on a cache miss). */
  pod?: V1Pod;
  /** The workspace PVC the runner mounts (workspace-claim.ts), if the cache holds it. */
  pvc?: V1PersistentVolumeClaim;
  /** For a waiting Session: the phone's runner Pods, and what a new Pod of it would be. */
  live?: { pods: V1Pod[]; wanted: LiveWanted };
  /** Why no runner Pod can be made yet (a Service it dials is missing: runner-network.ts); it waits. */
  podProblem?: string;
}

export interface Decision {
  /** The transition to take, if any. */
  step?: Step;
  /** Plain-words explanation (result.message of a controller-made end, condition message). */
  message?: string;
  exitCode?: number;
  /** Why a Starting Session's Pod has not started yet (its Started condition). */
  startProblem?: StartProblem;
  requeueAfterMs?: number;
  /** BindPod: the phone's live runner Pod the Session is handed to. */
  bindPod?: string;
  /** The phone's idle live Pods that go before this Session's Pod is made or bound (a workspace is ReadWriteOnce). */
  releasePods?: V1Pod[];
}

/** The transition `event` makes from the Session's phase; an illegal one is a bug, not a state. */
export function take(session: Session, event: Event): Step {
  const step = transition(session.status?.phase, event);
  if (!step.ok) throw new Error(`illegal transition for ${session.metadata.name}: ${step.error}`);
  return step;
}

/** Problems the CRD schema cannot see; each is permanent, so the Session fails with the message. */
export function specProblem(session: Session, repoHosts: readonly string[], phoneHash: PhoneHash): string | undefined {
  const { spec, metadata } = session;
  const name = metadata.name ?? '';
  if (name.length > 63) return `session name "${name}" is longer than 63 characters`;
  if (workspaceRepo(session, phoneHash) === undefined) {
    const own = workspaceName(phoneHash(spec.phone));
    const expected = `expected "${own}" or "${own}-<repository>"`;
    return `spec.workspace "${spec.workspace}" is not this phone's workspace (${expected})`;
  }
  if (!isPhonesHash(metadata.labels?.[LABEL_PHONE_HASH], spec.phone, phoneHash))
    return `label ${LABEL_PHONE_HASH}="${metadata.labels?.[LABEL_PHONE_HASH]}" does not match spec.phone`;
  const repo = repoProblem(spec.repo, repoHosts);
  if (repo) return repo;
  for (const key of ['run', 'approval'] as const) {
    const value = spec.timeouts?.[key];
    if (value !== undefined && parseDuration(value) === 0) return `spec.timeouts.${key} must be longer than 0s`;
  }
  return undefined;
}

/** Absent, or one of the phone's hashes: keyed, or the legacy one an object made by an earlier version carries. */
function isPhonesHash(label: string | undefined, phone: string, phoneHash: PhoneHash): boolean {
  const { keyed, legacy } = phoneHashes(phone, phoneHash);
  return label === undefined || label === keyed || label === legacy;
}

/** A workspace PVC labelled for another phone must never be mounted. */
export function workspaceProblem(
  session: Session,
  pvc: V1PersistentVolumeClaim | undefined,
  phoneHash: PhoneHash,
): string | undefined {
  if (isPhonesHash(pvc?.metadata?.labels?.[LABEL_PHONE_HASH], session.spec.phone, phoneHash)) return undefined;
  return `workspace "${pvc?.metadata?.name}" belongs to another phone`;
}

export const runTimeoutMs = (s: Session, c: Timeouts) =>
  s.spec.timeouts?.run ? parseDuration(s.spec.timeouts.run) : c.defaultRunTimeoutMs;
export const approvalTimeoutMs = (s: Session, c: Timeouts) =>
  s.spec.timeouts?.approval ? parseDuration(s.spec.timeouts.approval) : c.defaultApprovalTimeoutMs;

/**
 * When a Session still Starting or AwaitingApproval passes its start or approval deadline (ms since
 * the epoch); the pass at that moment ends it (decideActive), so one found past it is stuck.
 */
export function phaseDeadline(session: Session, config: Timeouts): number | undefined {
  const status = session.status ?? {};
  if (status.phase === 'Starting' && status.startTime) return Date.parse(status.startTime) + config.startTimeoutMs;
  if (status.phase === 'AwaitingApproval' && status.pending?.createdAt)
    return Date.parse(status.pending.createdAt) + approvalTimeoutMs(session, config);
  return undefined;
}

/** The decision for a Session that has not finished. */
export function decide(session: Session, seen: Observed, now: Date, config: DecideConfig): Decision {
  const phase = session.status?.phase;
  const fresh = phase === undefined || phase === 'Queued';
  if (fresh) {
    const problem =
      specProblem(session, config.repoHosts, config.phoneHash) ?? workspaceProblem(session, seen.pvc, config.phoneHash);
    if (problem) return { step: take(session, { type: 'InvalidSpec' }), message: problem };
  }
  if (session.spec.cancel) return { step: take(session, { type: 'Cancel' }), message: 'cancelled by the user' };
  return fresh ? decideWaiting(session, seen, now, config) : decideActive(session, seen.pod, now, config);
}

function decideWaiting(session: Session, seen: Observed, now: Date, config: DecideConfig): Decision {
  const { siblings } = seen;
  const admission = admit(session, siblings, config.maxQueued);
  switch (admission.kind) {
    case 'cleared':
      return {
        step: take(session, { type: 'QueueCleared' }),
        message: `cancelled together with the queue of ${admission.by}`,
      };
    case 'full':
      return {
        step: take(session, { type: 'QueueFull' }),
        message: `${admission.queued} commands are already waiting for this phone; send it again later`,
      };
    case 'wait':
      if (session.status?.phase === 'Queued') return {};
      return {
        step: take(session, { type: 'Enqueue' }),
        message: `waiting for the phone's earlier command (#${admission.position})`,
      };
    case 'run':
      return (
        overBudget(session, siblings, now, config.budget) ??
        heldBack(session, seen) ??
        admitted(session, seen, now, config)
      );
  }
}

/**
 * The turn came: the phone's live runner Pod takes the Session when one fits (RunnerBound), else a
 * runner Pod is made (PodCreated); the phone's other idle live Pods go first. The pass looks again
 * at the first deadline of a start.
 */
function admitted(session: Session, seen: Observed, now: Date, config: DecideConfig): Decision {
  const firstDeadline = Math.min(config.startTimeoutMs, runTimeoutMs(session, config));
  const requeueAfterMs = Math.max(1, firstDeadline);
  const pods = seen.live?.pods ?? [];
  const live = seen.live && pods.find((p) => bindable(p, seen.live!.wanted, seen.siblings, now, config.keepAliveMs));
  const bindPod = live?.metadata?.name;
  // With the keep-alive off a finished runner is not waiting: its Pod stays for the TTL, as it always did.
  const idle = config.keepAliveMs > 0 ? idlePods(pods, seen.siblings, bindPod) : [];
  const releasePods = idle.length ? { releasePods: idle } : {};
  if (bindPod) return { step: take(session, { type: 'RunnerBound' }), bindPod, ...releasePods, requeueAfterMs };
  return { step: take(session, { type: 'PodCreated' }), ...releasePods, requeueAfterMs };
}

/** The turn came but no runner Pod can be made yet: Queued, saying why, until the cluster changes (which wakes it). */
function heldBack(session: Session, seen: Observed): Decision | undefined {
  if (seen.podProblem === undefined) return undefined;
  if (session.status?.phase === 'Queued') return {};
  return { step: take(session, { type: 'Enqueue' }), message: seen.podProblem };
}

/** A command whose turn came after the phone's spend today reached the daily budget does not start. */
function overBudget(
  session: Session,
  siblings: Session[],
  now: Date,
  budget: DecideConfig['budget'],
): Decision | undefined {
  const spent = spentToday(siblings, now.getTime(), budget.timeZone);
  if (withinDailyBudget(spent, budget)) return undefined;
  const message =
    `today's budget is spent: ${usd(spent)} of ${usd(budget.dailyUsd)}; ` +
    `new commands start again after midnight (${budget.timeZone})`;
  return { step: take(session, { type: 'OverBudget' }), message };
}

/** The first loss of a running Session's Pod: a new Pod on the same workspace resumes the run. */
function replaced(session: Session, lost: string): Decision {
  return { step: take(session, { type: 'RunnerLost' }), message: `${lost}; a new runner pod continues the run` };
}

function podEnded(pod: V1Pod): { message: string; exitCode?: number } | undefined {
  const name = pod.metadata?.name;
  if (pod.metadata?.deletionTimestamp)
    return { message: `runner pod ${name} was deleted while the session was running` };
  const phase = pod.status?.phase;
  if (phase !== 'Failed' && phase !== 'Succeeded') return undefined;
  const terminated = pod.status?.containerStatuses?.find((c) => c.name === 'runner')?.state?.terminated;
  const exitCode = terminated?.exitCode;
  if (phase === 'Succeeded' || exitCode === 0) {
    return { message: 'the runner exited without reporting a result', exitCode: exitCode ?? 0 };
  }
  if (exitCode !== undefined) {
    return {
      message: `the runner exited with code ${exitCode}${terminated?.reason ? ` (${terminated.reason})` : ''}`,
      exitCode,
    };
  }
  const reason = pod.status?.reason ? `: ${pod.status.reason}` : '';
  const detail = pod.status?.message ? ` — ${pod.status.message}` : '';
  return { message: `runner pod ${name} failed${reason}${detail}` };
}

/** What an active Session (Starting…Publishing) needs, given its Pod as it is now. */
export function decideActive(session: Session, pod: V1Pod | undefined, now: Date, config: Timeouts): Decision {
  const status = session.status ?? {};
  const lost = pod ? podEnded(pod) : { message: `runner pod ${podOf(session)} disappeared` };
  if (lost || !pod) {
    const ended = lost ?? { message: '' };
    if ((status.runnerRestarts ?? 0) < 1) return replaced(session, ended.message);
    return { step: take(session, { type: 'PodLost' }), ...ended };
  }

  const deadlines: number[] = [];
  const start = status.startTime ? Date.parse(status.startTime) : undefined;
  if (start !== undefined && status.phase === 'Starting') {
    const expires = start + config.startTimeoutMs;
    if (now.getTime() >= expires) {
      const { message, problem } = startTimeoutMessage(pod, `${config.startTimeoutMs / 1000}s`);
      return { step: take(session, { type: 'StartTimeout' }), message, startProblem: problem };
    }
    deadlines.push(expires);
  }
  if (start !== undefined) {
    const runMs = runTimeoutMs(session, config);
    if (now.getTime() >= start + runMs) {
      return {
        step: take(session, { type: 'RunTimeout' }),
        message: `the run took longer than ${session.spec.timeouts?.run ?? `${runMs / 1000}s`} and was stopped`,
      };
    }
    deadlines.push(start + runMs);
  }
  if (status.phase === 'AwaitingApproval' && status.pending?.createdAt) {
    const expires = Date.parse(status.pending.createdAt) + approvalTimeoutMs(session, config);
    if (now.getTime() >= expires) {
      return {
        step: take(session, { type: 'ApprovalTimeout' }),
        message: 'no decision in time; the changes are kept on the workspace',
      };
    }
    deadlines.push(expires);
  }
  const next = Math.min(...deadlines);
  const held = status.phase === 'Starting' ? startProblem(pod) : undefined;
  return {
    ...(held ? { startProblem: held } : {}),
    ...(Number.isFinite(next) ? { requeueAfterMs: Math.max(1, next - now.getTime()) } : {}),
  };
}
