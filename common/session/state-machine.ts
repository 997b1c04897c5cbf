// The Session lifecycle as one pure function: (phase, event) → next phase + effects.
// Controller and runner both call transition(); neither re-implements the table.
import type { Phase } from './schema.ts';

export const TERMINAL_PHASES = ['Succeeded', 'Rejected', 'Cancelled', 'TimedOut', 'Failed'] as const satisfies readonly Phase[];
export const ACTIVE_PHASES = ['Starting', 'Working', 'AwaitingApproval', 'Publishing'] as const satisfies readonly Phase[];

export const isTerminal = (phase: Phase | undefined): boolean => (TERMINAL_PHASES as readonly string[]).includes(phase ?? '');
export const isActive = (phase: Phase | undefined): boolean => (ACTIVE_PHASES as readonly string[]).includes(phase ?? '');

/** Reasons carried into conditions and result.message; CamelCase as Kubernetes conditions expect. */
export const Reason = {
  Queued: 'Queued',
  QueueFull: 'QueueFull',
  PodCreated: 'PodCreated',
  RunnerStarted: 'RunnerStarted',
  AwaitingDecision: 'AwaitingDecision',
  Approved: 'Approved',
  Answered: 'Answered',
  Rejected: 'Rejected',
  Published: 'Published',
  Completed: 'Completed',
  Cancelled: 'Cancelled',
  ApprovalTimeout: 'ApprovalTimeout',
  RunTimeout: 'RunTimeout',
  PodLost: 'PodLost',
  AgentFailed: 'AgentFailed',
  InvalidSpec: 'InvalidSpec',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

export type Event =
  | { type: 'Enqueue' } //                   another session of this phone is active
  | { type: 'QueueFull' } //                 already 5 queued for this phone
  | { type: 'PodCreated' } //                phone has no active session; runner Pod made
  | { type: 'RunnerStarted' }
  | { type: 'RequestRaised'; kind: 'tool' | 'question' | 'changes' | 'plan' }
  | { type: 'Decided'; kind: 'tool' | 'question' | 'changes' | 'plan'; approved: boolean }
  | { type: 'Published' }
  | { type: 'FinishedWithoutChanges' }
  | { type: 'Cancel' }
  | { type: 'ApprovalTimeout' }
  | { type: 'RunTimeout' }
  | { type: 'PodLost' }
  | { type: 'AgentFailed' }
  | { type: 'InvalidSpec' };

export type Effect =
  | 'CreatePod' //          controller: make the runner Pod
  | 'DeletePod' //          controller: delete the runner Pod (grace period lets the runner stop the agent)
  | 'ClearPhoneQueue' //    controller: cancel every Queued session of this phone
  | 'StartNextQueued' //    controller: admit the oldest Queued session of this phone
  | 'RevertWorkspace' //    runner: git checkout . && git clean -fd
  | 'Publish' //            runner: branch, commit, push, pull request
  | 'ResumeAgent' //        runner: hand the decision back to the agent
  | 'SetCompletionTime';

export type Transition =
  | { ok: true; phase: Phase; reason: Reason; effects: Effect[] }
  | { ok: false; error: string };

const done = (extra: Effect[] = []): Effect[] => ['SetCompletionTime', 'DeletePod', ...extra];

const to = (phase: Phase, reason: Reason, effects: Effect[] = []): Transition => ({ ok: true, phase, reason, effects });

/** `undefined` phase means a Session nobody has looked at yet. */
export function transition(phase: Phase | undefined, event: Event): Transition {
  if (isTerminal(phase)) return { ok: false, error: `${phase} is final; ${event.type} ignored` };
  const active = isActive(phase);
  const fresh = phase === undefined || phase === 'Queued';

  switch (event.type) {
    case 'Enqueue':
      if (phase === undefined) return to('Queued', Reason.Queued);
      break;
    case 'QueueFull':
      if (phase === undefined) return to('Failed', Reason.QueueFull, ['SetCompletionTime']);
      break;
    case 'InvalidSpec':
      if (fresh) return to('Failed', Reason.InvalidSpec, ['SetCompletionTime']);
      break;
    case 'PodCreated':
      if (fresh) return to('Starting', Reason.PodCreated, ['CreatePod']);
      break;
    case 'RunnerStarted':
      if (phase === 'Starting') return to('Working', Reason.RunnerStarted);
      break;
    case 'RequestRaised':
      if (phase === 'Working') return to('AwaitingApproval', Reason.AwaitingDecision);
      break;
    case 'Decided':
      if (phase !== 'AwaitingApproval') break;
      if (event.kind === 'changes') {
        return event.approved
          ? to('Publishing', Reason.Approved, ['Publish'])
          : to('Rejected', Reason.Rejected, ['RevertWorkspace', ...done(['ClearPhoneQueue'])]);
      }
      if (event.kind === 'plan' && !event.approved) {
        return to('Rejected', Reason.Rejected, done(['ClearPhoneQueue']));
      }
      return to('Working', event.kind === 'question' ? Reason.Answered : Reason.Approved, ['ResumeAgent']);
    case 'Published':
      if (phase === 'Publishing') return to('Succeeded', Reason.Published, done(['StartNextQueued']));
      break;
    case 'FinishedWithoutChanges':
      if (phase === 'Working') return to('Succeeded', Reason.Completed, done(['StartNextQueued']));
      break;
    case 'Cancel':
      if (active || fresh) return to('Cancelled', Reason.Cancelled, done(['ClearPhoneQueue']));
      break;
    case 'ApprovalTimeout':
      if (phase === 'AwaitingApproval') return to('TimedOut', Reason.ApprovalTimeout, done(['ClearPhoneQueue']));
      break;
    case 'RunTimeout':
      if (active) return to('Failed', Reason.RunTimeout, done(['StartNextQueued']));
      break;
    case 'PodLost':
      if (active) return to('Failed', Reason.PodLost, done(['StartNextQueued']));
      break;
    case 'AgentFailed':
      if (phase === 'Working' || phase === 'AwaitingApproval' || phase === 'Publishing') {
        return to('Failed', Reason.AgentFailed, done(['StartNextQueued']));
      }
      break;
  }
  return { ok: false, error: `${event.type} is not allowed in phase ${phase ?? '(new)'}` };
}
