import { describe, expect, it } from 'vitest';
import { PHASES, type Phase } from '../../common/session/schema.ts';
import { endingEffects, isTerminal, transition, type Effect, type Event } from '../../common/session/state-machine.ts';

type From = Phase | '(new)';
type Row = [from: From, event: Event, to: Phase, effects: Effect[]];

const done = (...extra: Effect[]): Effect[] => ['SetCompletionTime', 'DeletePod', ...extra];
const ACTIVE = ['Starting', 'Working', 'AwaitingApproval', 'Publishing'] as const;

// Every legal transition. Rows marked § are rows of the table in docs/architecture.md ("Phases").
const legal: Row[] = [
  ['(new)', { type: 'Enqueue' }, 'Queued', []], // §
  ['(new)', { type: 'QueueFull' }, 'Failed', ['SetCompletionTime']], // § the 6th is refused
  ['(new)', { type: 'PodCreated' }, 'Starting', ['CreatePod']], // §
  ['Queued', { type: 'PodCreated' }, 'Starting', ['CreatePod']], // §
  ['(new)', { type: 'RunnerBound' }, 'Starting', ['BindPod']], // § the phone's live runner takes it
  ['Queued', { type: 'RunnerBound' }, 'Starting', ['BindPod']], // §
  ...ACTIVE.map((phase): Row => [phase, { type: 'RunnerLost' }, phase, ['ReplacePod']]), // § the run goes on
  ['(new)', { type: 'InvalidSpec' }, 'Failed', ['SetCompletionTime', 'StartNextQueued']], // its place in line passes on
  ['Queued', { type: 'InvalidSpec' }, 'Failed', ['SetCompletionTime', 'StartNextQueued']],
  ['(new)', { type: 'QueueCleared' }, 'Cancelled', done()], // swept by an earlier end: does not clear again
  ['Queued', { type: 'QueueCleared' }, 'Cancelled', done()],
  ['Starting', { type: 'RunnerStarted' }, 'Working', []], // §
  ['Working', { type: 'RequestRaised', kind: 'tool' }, 'AwaitingApproval', []], // §
  ['Working', { type: 'RequestRaised', kind: 'question' }, 'AwaitingApproval', []], // §
  ['Working', { type: 'RequestRaised', kind: 'changes' }, 'AwaitingApproval', []], // §
  ['Working', { type: 'RequestRaised', kind: 'plan' }, 'AwaitingApproval', []],
  ['Working', { type: 'RequestRaised', kind: 'egress' }, 'AwaitingApproval', []],
  // allow (once, session, repository) and deny both go back to the agent: its connection is answered by the proxy
  ['AwaitingApproval', { type: 'Decided', kind: 'egress', approved: true }, 'Working', ['ResumeAgent']],
  ['AwaitingApproval', { type: 'Decided', kind: 'egress', approved: false }, 'Working', ['ResumeAgent']],
  ['AwaitingApproval', { type: 'Decided', kind: 'egress', approved: false, revise: true }, 'Working', ['ResumeAgent']],
  // the proxy dropped its ask (the stream closed): back to work, nothing for the agent to resume
  ['AwaitingApproval', { type: 'RequestWithdrawn' }, 'Working', []],
  ['AwaitingApproval', { type: 'Decided', kind: 'tool', approved: true }, 'Working', ['ResumeAgent']], // §
  // § deny goes back to the agent
  ['AwaitingApproval', { type: 'Decided', kind: 'tool', approved: false }, 'Working', ['ResumeAgent']],
  ['AwaitingApproval', { type: 'Decided', kind: 'question', approved: true }, 'Working', ['ResumeAgent']], // §
  // declined: the agent decides
  ['AwaitingApproval', { type: 'Decided', kind: 'question', approved: false }, 'Working', ['ResumeAgent']],
  ['AwaitingApproval', { type: 'Decided', kind: 'plan', approved: true }, 'Working', ['ResumeAgent']],
  ['AwaitingApproval', { type: 'Decided', kind: 'plan', approved: false }, 'Rejected', done('ClearPhoneQueue')],
  // the agent plans again
  ['AwaitingApproval', { type: 'Decided', kind: 'plan', approved: false, revise: true }, 'Working', ['ResumeAgent']],
  [
    'AwaitingApproval',
    { type: 'Decided', kind: 'changes', approved: false, revise: true },
    'Rejected',
    ['RevertWorkspace', ...done('ClearPhoneQueue')],
  ], // revise is for plans only
  // as a deny
  ['AwaitingApproval', { type: 'Decided', kind: 'tool', approved: false, revise: true }, 'Working', ['ResumeAgent']],
  [
    'AwaitingApproval',
    { type: 'Decided', kind: 'question', approved: false, revise: true },
    'Working',
    ['ResumeAgent'],
  ], // as a decline
  ['AwaitingApproval', { type: 'Decided', kind: 'changes', approved: true }, 'Publishing', ['Publish']], // §
  [
    'AwaitingApproval',
    { type: 'Decided', kind: 'changes', approved: false },
    'Rejected',
    ['RevertWorkspace', ...done('ClearPhoneQueue')],
  ], // §
  ['Publishing', { type: 'Published' }, 'Succeeded', done('StartNextQueued')], // §
  ['Working', { type: 'FinishedWithoutChanges' }, 'Succeeded', done('StartNextQueued')], // §
  ['AwaitingApproval', { type: 'ApprovalTimeout' }, 'TimedOut', done('ClearPhoneQueue')], // §
  ...(['(new)', 'Queued', ...ACTIVE] as const).map((p): Row => [
    p,
    { type: 'Cancel' },
    'Cancelled',
    done('ClearPhoneQueue'),
  ]), // §
  ...ACTIVE.map((p): Row => [p, { type: 'RunTimeout' }, 'Failed', done('StartNextQueued')]), // §
  ...ACTIVE.map((p): Row => [p, { type: 'PodLost' }, 'Failed', done('StartNextQueued')]), // §
  ...(['Working', 'AwaitingApproval', 'Publishing'] as const).map((p): Row => [
    p,
    { type: 'AgentFailed' },
    'Failed',
    done('StartNextQueued'),
  ]), // § overrides an approval request
];

const allEvents: Event[] = [
  { type: 'Enqueue' },
  { type: 'QueueFull' },
  { type: 'PodCreated' },
  { type: 'RunnerBound' },
  { type: 'RunnerLost' },
  { type: 'RunnerStarted' },
  { type: 'RequestWithdrawn' },
  ...(['tool', 'question', 'changes', 'plan', 'egress'] as const).flatMap((kind): Event[] => [
    { type: 'RequestRaised', kind },
    { type: 'Decided', kind, approved: true },
    { type: 'Decided', kind, approved: false },
    { type: 'Decided', kind, approved: false, revise: true },
  ]),
  { type: 'Published' },
  { type: 'FinishedWithoutChanges' },
  { type: 'Cancel' },
  { type: 'ApprovalTimeout' },
  { type: 'RunTimeout' },
  { type: 'PodLost' },
  { type: 'AgentFailed' },
  { type: 'InvalidSpec' },
  { type: 'QueueCleared' },
];
const allFrom: From[] = ['(new)', ...PHASES];
const key = (from: From, event: Event) => `${from} ${JSON.stringify(event)}`;
const legalKeys = new Set(legal.map(([from, event]) => key(from, event)));
const illegal = allFrom.flatMap((from) =>
  allEvents.filter((e) => !legalKeys.has(key(from, e))).map((e) => [from, e] as const),
);

describe('session state machine', () => {
  it.each(legal)('%s + %j → %s', (from, event, to, effects) => {
    const result = transition(from === '(new)' ? undefined : from, event);
    expect(result).toEqual({ ok: true, phase: to, reason: expect.any(String), effects });
  });

  it.each(illegal)('%s + %j is refused', (from, event) => {
    const result = transition(from === '(new)' ? undefined : from, event);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(/not allowed|is final/);
  });

  it('covers every phase × event pair exactly once', () => {
    expect(legal.length + illegal.length).toBe(allFrom.length * allEvents.length);
    expect(legalKeys.size).toBe(legal.length);
  });

  it(`reads back the effects of every end from its reason \
(what the controller performs for an end the runner wrote)`, () => {
    for (const [from, event] of legal) {
      const result = transition(from === '(new)' ? undefined : from, event);
      if (!result.ok || !isTerminal(result.phase)) continue;
      expect(endingEffects(result.reason), `${from} ${event.type}`).toEqual(
        result.effects.filter((e) => e !== 'RevertWorkspace'),
      );
    }
    expect(endingEffects('PodCreated')).toEqual([]);
  });

  it('never leaves a terminal phase', () => {
    for (const from of ['Succeeded', 'Rejected', 'Cancelled', 'TimedOut', 'Failed'] as const) {
      for (const event of allEvents) expect(transition(from, event).ok).toBe(false);
    }
  });
});
