// computeStatus: the controller-owned part of a Session's status as a pure function of
// what a reconcile pass saw and decided. It returns the merge patch to write (or nothing),
// every string of it through the redaction list (error texts and prompts may carry tokens).
import { makeRedactor, redactDeep } from '../common/log.ts';
import { formatDuration, maskPhone, previewPrompt } from '../common/session/display.ts';
import type { Session, SessionStatus } from '../common/session/schema.ts';
import type { StartProblem } from './start.ts';
import { isTerminal, Reason, type Step } from '../common/session/state-machine.ts';
import {
  CONDITION_ADMITTED,
  CONDITION_FINISHED,
  CONDITION_STARTED,
  finishedMessage,
  finishedReason,
  sameJson,
  setCondition,
} from './conditions.ts';

export interface StatusInput {
  session: Session;
  now: Date;
  /** The transition the controller decided on (decide.ts `take`). */
  step?: Step;
  /** Plain-words explanation for a controller-made ending (result.message). */
  message?: string;
  exitCode?: number;
  /** Why the runner Pod of a Starting Session has not started yet. */
  startProblem?: StartProblem;
  /** The runner Pod created or adopted (cold), or the phone's live one bound (warm), in this pass. */
  pod?: { name: string; createdAt?: string | Date; start?: 'cold' | 'warm' };
  /** The Pod made in this pass in place of the Session's lost one (ReplacePod). */
  replacement?: string;
}

export interface StatusOutcome {
  /** Merge patch for the status subresource, absent when nothing changed. */
  patch?: Partial<SessionStatus>;
  status: SessionStatus;
  /** The transition taken, if any. */
  reason?: string;
}

/** The controller holds no secret of its own: token-shaped strings are what it must keep out. */
const redact = makeRedactor();

const OWNED = [
  'phase',
  'conditions',
  'podName',
  'startTime',
  'runnerStart',
  'runnerRestarts',
  'completionTime',
  'display',
  'observedGeneration',
] as const;

const iso = (t: string | Date | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

export function computeStatus(input: StatusInput): StatusOutcome {
  const outcome = unredactedStatus(input);
  const status = redactDeep(outcome.status, redact);
  return { ...outcome, status, patch: patchOf(input.session.status ?? {}, status) };
}

function unredactedStatus(input: StatusInput): Omit<StatusOutcome, 'patch'> {
  const { session, now } = input;
  const generation = session.metadata.generation;
  // Shallow: every change below replaces a top-level field (setCondition returns a new list).
  const status: SessionStatus = { ...(session.status ?? {}) };
  const reason = input.step ? applyStep(status, input, input.step, generation) : undefined;
  if (input.pod) applyPod(status, input.pod, now, generation);
  // Deadlines keep counting from the stored startTime and pending.createdAt.
  if (input.replacement)
    Object.assign(status, { podName: input.replacement, runnerRestarts: (status.runnerRestarts ?? 0) + 1 });
  status.conditions = startedCondition(status, input.startProblem, now, generation);
  const alreadyFinished = status.conditions?.some((c) => c.type === CONDITION_FINISHED);
  if (isTerminal(status.phase) && (input.step || !alreadyFinished)) applyEnd(status, input, reason, generation);

  const begin = status.startTime ?? iso(session.metadata.creationTimestamp);
  status.display = {
    phone: maskPhone(session.spec.phone),
    prompt: previewPrompt(session.spec.prompt),
    ...(status.completionTime && begin
      ? { duration: formatDuration(Date.parse(status.completionTime) - Date.parse(begin)) }
      : {}),
  };
  if (generation !== undefined) status.observedGeneration = generation;
  return { status, reason };
}

/** The transition decided: its phase, its completion time, a Queued condition, the result's message and exit code. */
function applyStep(status: SessionStatus, input: StatusInput, step: Step, generation?: number): string {
  const { now } = input;
  status.phase = step.phase;
  if (step.effects.includes('SetCompletionTime')) status.completionTime ??= now.toISOString();
  if (step.phase === 'Queued') {
    const message = input.message ?? 'waiting for the previous command of this phone';
    const queued = { type: CONDITION_ADMITTED, status: 'False' as const, reason: step.reason, message };
    status.conditions = setCondition(status.conditions, queued, now, generation);
  }
  if (input.message !== undefined || input.exitCode !== undefined) {
    status.result = {
      ...status.result,
      ...(input.message !== undefined && isTerminal(step.phase) ? { message: input.message } : {}),
      ...(input.exitCode !== undefined ? { exitCode: input.exitCode } : {}),
    };
  }
  return step.reason;
}

/** The runner Pod made or bound in this pass: its name, the start time, how it started, Admitted. */
function applyPod(status: SessionStatus, pod: NonNullable<StatusInput['pod']>, now: Date, generation?: number) {
  status.podName = pod.name;
  status.startTime ??= iso(pod.createdAt) ?? now.toISOString();
  status.runnerStart = pod.start ?? 'cold';
  const warm = pod.start === 'warm';
  const admitted = {
    type: CONDITION_ADMITTED,
    status: 'True' as const,
    reason: warm ? Reason.RunnerBound : Reason.PodCreated,
    message: warm ? `live runner pod ${pod.name} bound` : `runner pod ${pod.name} created`,
  };
  status.conditions = setCondition(status.conditions, admitted, now, generation);
}

/** An end: its completion time and the Finished condition (the decided reason, else the one the phase implies). */
function applyEnd(status: SessionStatus, input: StatusInput, reason: string | undefined, generation?: number) {
  const { session, now } = input;
  status.completionTime ??= now.toISOString();
  const finished = { ...session, status };
  const condition = {
    type: CONDITION_FINISHED,
    status: 'True' as const,
    reason: reason ?? finishedReason(finished),
    message: input.message ?? finishedMessage(finished),
  };
  status.conditions = setCondition(status.conditions, condition, now, generation);
}

/**
 * A finished Session whose status the controller has already completed for this spec: its
 * Finished condition is there and observedGeneration is current. Nothing the controller owns
 * can change any more (the end, the times and the display all derive from what was written then),
 * so a resync passes it by without computing its status again.
 */
export function finalStatusWritten(session: Session): boolean {
  const status = session.status;
  return (
    isTerminal(status?.phase) &&
    status?.observedGeneration === session.metadata.generation &&
    status?.display !== undefined &&
    (status.conditions ?? []).some((c) => c.type === CONDITION_FINISHED)
  );
}

function patchOf(before: SessionStatus, status: SessionStatus): Partial<SessionStatus> | undefined {
  const patch: Record<string, unknown> = {};
  for (const key of OWNED) {
    if (!sameJson(before[key], status[key])) patch[key] = status[key];
  }
  const ownedResult = (s: SessionStatus) => ({ message: s.result?.message, exitCode: s.result?.exitCode });
  if (!sameJson(ownedResult(before), ownedResult(status))) patch.result = ownedResult(status);
  return Object.keys(patch).length ? (patch as Partial<SessionStatus>) : undefined;
}

/** Started: False with the Kubernetes reason while the Pod is held back; True once the runner left Starting. */
function startedCondition(
  status: SessionStatus,
  problem: StartProblem | undefined,
  now: Date,
  generation?: number,
): SessionStatus['conditions'] {
  if (problem) {
    return setCondition(
      status.conditions,
      { type: CONDITION_STARTED, status: 'False', reason: problem.reason, message: problem.detail || problem.plain },
      now,
      generation,
    );
  }
  const held = status.conditions?.find((c) => c.type === CONDITION_STARTED && c.status === 'False');
  if (!held || status.phase === 'Starting' || isTerminal(status.phase)) return status.conditions;
  return setCondition(
    status.conditions,
    { type: CONDITION_STARTED, status: 'True', reason: Reason.RunnerStarted, message: 'the runner started' },
    now,
    generation,
  );
}
