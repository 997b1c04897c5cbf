// Pure decisions of a reconcile pass: spec validation, what an active Session's Pod and
// deadlines mean, and the clean-up due for a finished Session. Timestamps come from status.
import type { V1Pod } from '@kubernetes/client-node';
import { parseDuration, phoneHash } from '../common/session/display.ts';
import { LABEL_PHONE_HASH, runnerName, workspaceName } from '../common/session/names.ts';
import type { Session } from '../common/session/schema.ts';
import { isTerminal, Reason, type Event } from '../common/session/state-machine.ts';
import type { ControllerConfig } from './config.ts';
import { CONDITION_FINISHED } from './conditions.ts';

type Timeouts = Pick<ControllerConfig, 'defaultRunTimeoutMs' | 'defaultApprovalTimeoutMs'>;

const REPO_URL = /^(https?:\/\/\S+|ssh:\/\/\S+|git@[^\s:]+:\S+|\/\S*|file:\/\/\S+)$/;

/** Problems the CRD schema cannot see; each is permanent, so the Session fails with the message. */
export function specProblem(session: Session): string | undefined {
  const { spec, metadata } = session;
  const name = metadata.name ?? '';
  if (name.length > 63) return `session name "${name}" is longer than 63 characters`;
  const expected = workspaceName(spec.phone);
  if (spec.workspace !== expected) return `spec.workspace "${spec.workspace}" is not this phone's workspace (expected "${expected}")`;
  const label = metadata.labels?.[LABEL_PHONE_HASH];
  if (label !== undefined && label !== phoneHash(spec.phone)) return `label ${LABEL_PHONE_HASH}="${label}" does not match spec.phone`;
  if (!REPO_URL.test(spec.repo.url)) return `spec.repo.url "${spec.repo.url}" is not a git URL (https://, ssh://, git@host:path or a path)`;
  for (const key of ['run', 'approval'] as const) {
    const value = spec.timeouts?.[key];
    if (value !== undefined && parseDuration(value) === 0) return `spec.timeouts.${key} must be longer than 0s`;
  }
  return undefined;
}

export const runTimeoutMs = (s: Session, c: Timeouts) => (s.spec.timeouts?.run ? parseDuration(s.spec.timeouts.run) : c.defaultRunTimeoutMs);
export const approvalTimeoutMs = (s: Session, c: Timeouts) =>
  (s.spec.timeouts?.approval ? parseDuration(s.spec.timeouts.approval) : c.defaultApprovalTimeoutMs);

export interface ActiveDecision {
  event?: Event;
  message?: string;
  exitCode?: number;
  deletePod: boolean;
  requeueAfterMs?: number;
}

function podEnded(pod: V1Pod): { message: string; exitCode?: number } | undefined {
  const name = pod.metadata?.name;
  if (pod.metadata?.deletionTimestamp) return { message: `runner pod ${name} was deleted while the session was running` };
  const phase = pod.status?.phase;
  if (phase !== 'Failed' && phase !== 'Succeeded') return undefined;
  const terminated = pod.status?.containerStatuses?.find((c) => c.name === 'runner')?.state?.terminated;
  const exitCode = terminated?.exitCode;
  if (phase === 'Succeeded' || exitCode === 0) {
    return { message: 'the runner exited without reporting a result', exitCode: exitCode ?? 0 };
  }
  if (exitCode !== undefined) {
    return { message: `the runner exited with code ${exitCode}${terminated?.reason ? ` (${terminated.reason})` : ''}`, exitCode };
  }
  return { message: `runner pod ${name} failed${pod.status?.reason ? `: ${pod.status.reason}` : ''}${pod.status?.message ? ` — ${pod.status.message}` : ''}` };
}

/** What an active Session (Starting…Publishing) needs, given its Pod as it is now. */
export function decideActive(session: Session, pod: V1Pod | undefined, now: Date, config: Timeouts): ActiveDecision {
  const status = session.status ?? {};
  if (!pod) {
    return { event: { type: 'PodLost' }, message: `runner pod ${runnerName(session.metadata.name!)} disappeared`, deletePod: false };
  }
  const ended = podEnded(pod);
  if (ended) return { event: { type: 'PodLost' }, ...ended, deletePod: !pod.metadata?.deletionTimestamp };

  const deadlines: number[] = [];
  const start = status.startTime ? Date.parse(status.startTime) : undefined;
  if (start !== undefined) {
    const runMs = runTimeoutMs(session, config);
    if (now.getTime() >= start + runMs) {
      return { event: { type: 'RunTimeout' }, message: `the run took longer than ${session.spec.timeouts?.run ?? `${runMs / 1000}s`} and was stopped`, deletePod: true };
    }
    deadlines.push(start + runMs);
  }
  if (status.phase === 'AwaitingApproval' && status.pending?.createdAt) {
    const approvalMs = approvalTimeoutMs(session, config);
    const expires = Date.parse(status.pending.createdAt) + approvalMs;
    if (now.getTime() >= expires) {
      return { event: { type: 'ApprovalTimeout' }, message: 'no decision in time; the changes are kept on the workspace', deletePod: true };
    }
    deadlines.push(expires);
  }
  const next = Math.min(...deadlines);
  return { deletePod: false, ...(Number.isFinite(next) ? { requeueAfterMs: Math.max(1, next - now.getTime()) } : {}) };
}

const CONTROLLER_ENDINGS: readonly string[] = [Reason.Cancelled, Reason.ApprovalTimeout, Reason.RunTimeout, Reason.PodLost];

export interface TerminalDecision {
  deletePod: boolean;
  deleteSession: boolean;
  requeueAfterMs?: number;
}

type Retention = Pick<ControllerConfig, 'podTtlMs' | 'historyCount' | 'historyMaxAgeMs'>;

const completedAt = (s: Session) => Date.parse(s.status?.completionTime ?? s.metadata.creationTimestamp?.toString() ?? '0');

/**
 * Clean-up of a finished Session: a Pod the controller stopped goes at once, any other
 * after the TTL (logs stay readable); the Session itself is kept while it is among the
 * phone's newest `historyCount` finished ones and younger than `historyMaxAgeMs`.
 */
export function decideTerminal(session: Session, pod: V1Pod | undefined, siblings: Session[], now: Date, config: Retention): TerminalDecision {
  const done = completedAt(session);
  const waits: number[] = [];
  let deletePod = false;
  if (pod && !pod.metadata?.deletionTimestamp) {
    const reason = session.status?.conditions?.find((c) => c.type === CONDITION_FINISHED)?.reason ?? '';
    const running = pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
    if ((running && CONTROLLER_ENDINGS.includes(reason)) || now.getTime() >= done + config.podTtlMs) deletePod = true;
    else waits.push(done + config.podTtlMs);
  }
  const finished = [...siblings.filter((s) => s.metadata.name !== session.metadata.name && isTerminal(s.status?.phase)), session]
    .sort((a, b) => completedAt(b) - completedAt(a) || (b.metadata.name ?? '').localeCompare(a.metadata.name ?? ''));
  const rank = finished.findIndex((s) => s.metadata.name === session.metadata.name);
  const deleteSession = rank >= config.historyCount || now.getTime() >= done + config.historyMaxAgeMs;
  if (!deleteSession) waits.push(done + config.historyMaxAgeMs);
  const next = Math.min(...waits);
  return { deletePod, deleteSession, ...(Number.isFinite(next) ? { requeueAfterMs: Math.max(1, next - now.getTime()) } : {}) };
}
