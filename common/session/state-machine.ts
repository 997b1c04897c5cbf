// The Session lifecycle as one pure function: (phase, event) → next phase + effects.
// Controller and runner both call transition() and perform the effects it returns; neither
// re-implements the table. How each effect is carried out: docs/controller.md (State machine).
import type { Pending, Phase } from './schema.ts';

export const TERMINAL_PHASES = [
  'Succeeded',
  'Rejected',
  'Cancelled',
  'TimedOut',
  'Failed',
] as const satisfies readonly Phase[];
export const ACTIVE_PHASES = [
  'Starting',
  'Working',
  'AwaitingApproval',
  'Publishing',
] as const satisfies readonly Phase[];

export const isTerminal = (phase: Phase | undefined): boolean =>
  (TERMINAL_PHASES as readonly string[]).includes(phase ?? '');
export const isActive = (phase: Phase | undefined): boolean =>
  (ACTIVE_PHASES as readonly string[]).includes(phase ?? '');

/** Reasons carried into conditions and result.message; CamelCase as Kubernetes conditions expect. */
export const Reason = {
  Queued: 'Queued',
  QueueFull: 'QueueFull',
  PodCreated: 'PodCreated',
  RunnerBound: 'RunnerBound',
  RunnerReplaced: 'RunnerReplaced',
  RunnerStarted: 'RunnerStarted',
  AwaitingDecision: 'AwaitingDecision',
  Approved: 'Approved',
  Answered: 'Answered',
  Withdrawn: 'Withdrawn',
  Revised: 'Revised',
  Rejected: 'Rejected',
  Published: 'Published',
  Completed: 'Completed',
  Cancelled: 'Cancelled',
  QueueCleared: 'QueueCleared',
  ApprovalTimeout: 'ApprovalTimeout',
  RunTimeout: 'RunTimeout',
  StartTimeout: 'StartTimeout',
  PodLost: 'PodLost',
  AgentFailed: 'AgentFailed',
  InvalidSpec: 'InvalidSpec',
  CostStopped: 'CostStopped',
  OverBudget: 'OverBudget',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

export type Event =
  | { type: 'Enqueue' } //                   another session of this phone is active
  | { type: 'QueueFull' } //                 already maxQueued waiting for this phone
  | { type: 'PodCreated' } //                phone has no active session; runner Pod made
  | { type: 'RunnerBound' } //               phone has no active session; its live runner Pod takes this one
  | { type: 'RunnerLost' } //                the running Session's Pod is gone for the first time: a new one resumes it
  | { type: 'RunnerStarted' }
  | { type: 'RequestRaised'; kind: Pending['kind'] }
  // revise: a plan goes back to the agent with the user's words
  | { type: 'Decided'; kind: Pending['kind']; approved: boolean; revise?: boolean }
  // the asker took the request back before the phone answered (egress: the proxy dropped its ask)
  | { type: 'RequestWithdrawn' }
  | { type: 'Published' }
  | { type: 'FinishedWithoutChanges' }
  | { type: 'Cancel' } //                    the user's cancel (spec.cancel)
  | { type: 'QueueCleared' } //              an earlier Session's end cleared the queue this one waited in
  | { type: 'ApprovalTimeout' }
  | { type: 'RunTimeout' }
  | { type: 'StartTimeout' } //             the runner Pod did not start in time (image, scheduling, volume)
  | { type: 'PodLost' }
  | { type: 'AgentFailed' }
  | { type: 'InvalidSpec' }
  | { type: 'OverBudget' }; //               the phone's spend today reached its daily budget when this one's turn came

export type Effect =
  | 'CreatePod' //          controller: make the runner Pod (with its workspace and credentials)
  | 'BindPod' //            controller: hand the Session to the phone's live runner Pod (status.podName, then its Role)
  | 'ReplacePod' //         controller: a new runner Pod on the same workspace, which resumes the run once
  | 'DeletePod' //          controller: release the runner Pod: kept live for runner.keepAlive, then deleted
  | 'ClearPhoneQueue' //    controller: cancel (QueueCleared) the phone's Sessions waiting when this one ended
  | 'StartNextQueued' //    controller: admit the oldest waiting Session of this phone
  | 'RevertWorkspace' //    runner: git checkout . && git clean -fd, before the phase is written
  | 'Publish' //            runner: branch, commit, push, pull request
  | 'ResumeAgent' //        runner: hand the decision back to the agent
  | 'SetCompletionTime'; // whoever writes the phase: status.completionTime

export type Transition = { ok: true; phase: Phase; reason: Reason; effects: Effect[] } | { ok: false; error: string };

/** A transition the table allowed. */
export type Step = Extract<Transition, { ok: true }>;

const done = (extra: Effect[] = []): Effect[] => ['SetCompletionTime', 'DeletePod', ...extra];

/** Every way a Session ends: its final phase and the effects of ending so. */
const ENDINGS = {
  [Reason.QueueFull]: { phase: 'Failed', effects: ['SetCompletionTime'] },
  [Reason.InvalidSpec]: { phase: 'Failed', effects: ['SetCompletionTime', 'StartNextQueued'] },
  [Reason.OverBudget]: { phase: 'Failed', effects: ['SetCompletionTime', 'StartNextQueued'] },
  [Reason.QueueCleared]: { phase: 'Cancelled', effects: done() },
  [Reason.Cancelled]: { phase: 'Cancelled', effects: done(['ClearPhoneQueue']) },
  // "stop" at a cost pause stops this run only; the queued commands each face the daily budget.
  [Reason.CostStopped]: { phase: 'Cancelled', effects: done(['StartNextQueued']) },
  [Reason.Rejected]: { phase: 'Rejected', effects: done(['ClearPhoneQueue']) },
  [Reason.ApprovalTimeout]: { phase: 'TimedOut', effects: done(['ClearPhoneQueue']) },
  [Reason.Published]: { phase: 'Succeeded', effects: done(['StartNextQueued']) },
  [Reason.Completed]: { phase: 'Succeeded', effects: done(['StartNextQueued']) },
  [Reason.RunTimeout]: { phase: 'Failed', effects: done(['StartNextQueued']) },
  [Reason.StartTimeout]: { phase: 'Failed', effects: done(['StartNextQueued']) },
  [Reason.PodLost]: { phase: 'Failed', effects: done(['StartNextQueued']) },
  [Reason.AgentFailed]: { phase: 'Failed', effects: done(['StartNextQueued']) },
} as const satisfies Partial<Record<Reason, { phase: Phase; effects: readonly Effect[] }>>;
type Ending = keyof typeof ENDINGS;

/**
 * The effects of a Session's end, read back from the reason it ended with (its Finished
 * condition): what the controller still performs for an end someone else wrote.
 */
export function endingEffects(reason: string): readonly Effect[] {
  return (ENDINGS as Partial<Record<string, { effects: readonly Effect[] }>>)[reason]?.effects ?? [];
}

const to = (phase: Phase, reason: Reason, effects: Effect[] = []): Transition => ({ ok: true, phase, reason, effects });
const end = (reason: Ending, first: Effect[] = []): Transition =>
  to(ENDINGS[reason].phase, reason, [...first, ...ENDINGS[reason].effects]);

function decided(event: Extract<Event, { type: 'Decided' }>): Transition {
  if (event.kind === 'changes') {
    return event.approved ? to('Publishing', Reason.Approved, ['Publish']) : end(Reason.Rejected, ['RevertWorkspace']);
  }
  if (event.kind === 'plan' && event.revise) return to('Working', Reason.Revised, ['ResumeAgent']);
  if (event.kind === 'plan' && !event.approved) return end(Reason.Rejected);
  // "stop" at the spending pause is the user's cancel: the changes stay on the workspace.
  if (event.kind === 'cost' && !event.approved) return end(Reason.CostStopped);
  return to('Working', event.kind === 'question' ? Reason.Answered : Reason.Approved, ['ResumeAgent']);
}

/** The moves of a Session not yet started: queued, refused, or admitted (a Pod made, or the live one bound). */
function admission(phase: 'Queued' | undefined, event: Event): Transition | undefined {
  switch (event.type) {
    case 'Enqueue':
      return phase === undefined ? to('Queued', Reason.Queued) : undefined;
    case 'QueueFull':
      return phase === undefined ? end(Reason.QueueFull) : undefined;
    case 'InvalidSpec':
      return end(Reason.InvalidSpec);
    case 'OverBudget':
      return end(Reason.OverBudget);
    case 'PodCreated':
      return to('Starting', Reason.PodCreated, ['CreatePod']);
    case 'RunnerBound':
      return to('Starting', Reason.RunnerBound, ['BindPod']);
    case 'QueueCleared':
      return end(Reason.QueueCleared);
    default:
      return undefined;
  }
}

/** `undefined` phase means a Session nobody has looked at yet. */
export function transition(phase: Phase | undefined, event: Event): Transition {
  if (isTerminal(phase)) return { ok: false, error: `${phase} is final; ${event.type} ignored` };
  const active = isActive(phase);
  if (event.type !== 'Cancel' && (phase === undefined || phase === 'Queued')) {
    return admission(phase, event) ?? { ok: false, error: `${event.type} is not allowed in phase ${phase ?? '(new)'}` };
  }

  switch (event.type) {
    case 'RunnerLost':
      if (active) return to(phase!, Reason.RunnerReplaced, ['ReplacePod']);
      break;
    case 'RunnerStarted':
      if (phase === 'Starting') return to('Working', Reason.RunnerStarted);
      break;
    case 'RequestRaised':
      if (phase === 'Working') return to('AwaitingApproval', Reason.AwaitingDecision);
      break;
    case 'Decided':
      if (phase === 'AwaitingApproval') return decided(event);
      break;
    case 'RequestWithdrawn':
      if (phase === 'AwaitingApproval') return to('Working', Reason.Withdrawn);
      break;
    case 'Published':
      if (phase === 'Publishing') return end(Reason.Published);
      break;
    case 'FinishedWithoutChanges':
      if (phase === 'Working') return end(Reason.Completed);
      break;
    case 'Cancel':
      if (active || phase === undefined || phase === 'Queued') return end(Reason.Cancelled);
      break;
    case 'ApprovalTimeout':
      if (phase === 'AwaitingApproval') return end(Reason.ApprovalTimeout);
      break;
    case 'RunTimeout':
    case 'PodLost':
      if (active) return end(Reason[event.type]);
      break;
    case 'StartTimeout':
      if (phase === 'Starting') return end(Reason.StartTimeout);
      break;
    case 'AgentFailed':
      if (phase === 'Working' || phase === 'AwaitingApproval' || phase === 'Publishing') return end(Reason.AgentFailed);
      break;
  }
  return { ok: false, error: `${event.type} is not allowed in phase ${phase ?? '(new)'}` };
}
