// The spending pause: the runner's price arithmetic, the state machine's answer to continue/stop,
// and how the relay shows the request and reads a typed reply.
import { describe, expect, it } from 'vitest';
import { SESSION_DEFAULTS } from '../../common/session/defaults.ts';
import type { Pending, Session } from '../../common/session/schema.ts';
import { Reason, transition } from '../../common/session/state-machine.ts';
import { finishedReason } from '../../controller/conditions.ts';
import { route } from '../../relay/inbound/router.ts';
import { owed } from '../../relay/outbound/owed.ts';
import { CostMeter, priceOf } from '../../runner-image/model/cost-meter.ts';

const pending: Pending = { id: 'cost-1', kind: 'cost', costUsd: 2.0437, createdAt: '2026-11-23T10:00:00Z' };

describe('pricing model responses', () => {
  it('prices tokens by model family, an unknown model as the dearest', () => {
    const usage = {
      input_tokens: 1_000_000,
      output_tokens: 100_000,
      cache_creation_input_tokens: 10_000,
      cache_read_input_tokens: 200_000,
    };
    expect(priceOf('claude-sonnet-4-5', usage)).toBeCloseTo(3 + 1.5 + 0.0375 + 0.06, 10);
    expect(priceOf('claude-opus-4-1', usage)).toBeCloseTo(15 + 7.5 + 0.1875 + 0.3, 10);
    expect(priceOf('some-new-model', usage)).toBe(priceOf('claude-opus-4-1', usage));
  });

  it('counts absurd, negative or missing usage as nothing', () => {
    for (const usage of [
      {},
      { input_tokens: -5 },
      { input_tokens: Number.NaN },
      { output_tokens: 1e12 },
      { input_tokens: '1000' },
      { output_tokens: Infinity },
    ]) {
      expect(priceOf('claude-sonnet-4-5', usage)).toBe(0);
    }
  });

  it('counts a response once, and pauses at each multiple of the threshold after continue', () => {
    const meter = new CostMeter(1);
    const million = { input_tokens: 200_000 }; // $0.60 at sonnet prices
    expect(meter.add('r1', 'sonnet', million)).toBe(true);
    expect(meter.add('r1', 'sonnet', million)).toBe(false);
    expect(meter.pauseDue).toBe(false);
    meter.add('r2', 'sonnet', million);
    expect([meter.spentUsd, meter.pauseDue]).toEqual([1.2, true]);
    meter.resume();
    expect(meter.pauseDue).toBe(false);
    meter.add('r3', 'sonnet', million);
    meter.add('r4', 'sonnet', million);
    expect(meter.pauseDue).toBe(true);
    expect(new CostMeter(0).pauseDue).toBe(false);
    const never = new CostMeter(Number.NaN);
    never.add('r', 'opus', { output_tokens: 9_000_000 });
    expect(never.pauseDue).toBe(false);
  });

  it('a finished turn counts at its own total: the final output tokens, never less than its responses', () => {
    const meter = new CostMeter(0);
    // Claude Code reports a response as it begins (1 output token); the turn's total has them all.
    meter.add('r1', 'claude-sonnet-4-5', { input_tokens: 100_000, output_tokens: 1 });
    meter.add('r2', 'claude-sonnet-4-5', { input_tokens: 100_000, output_tokens: 1 });
    expect(meter.spentUsd).toBeCloseTo(0.6 + 30e-6, 10);
    meter.endTurn({ input_tokens: 200_000, output_tokens: 20_000 });
    expect(meter.spentUsd).toBeCloseTo(0.6 + 0.3, 10);
    // A second turn of the same run adds to the first; a total below its responses' reports counts them.
    meter.add('r3', 'claude-sonnet-4-5', { input_tokens: 100_000 });
    meter.endTurn({});
    expect(meter.spentUsd).toBeCloseTo(0.9 + 0.3, 10);
  });
});

describe('continue or stop', () => {
  it('continue resumes the agent; stop ends this run only: the queued commands still get their turn', () => {
    expect(transition('AwaitingApproval', { type: 'Decided', kind: 'cost', approved: true })).toEqual({
      ok: true,
      phase: 'Working',
      reason: Reason.Approved,
      effects: ['ResumeAgent'],
    });
    expect(transition('AwaitingApproval', { type: 'Decided', kind: 'cost', approved: false })).toEqual({
      ok: true,
      phase: 'Cancelled',
      reason: Reason.CostStopped,
      effects: ['SetCompletionTime', 'DeletePod', 'StartNextQueued'],
    });
  });

  it('the controller reads a runner-written Cancelled as the cost stop, and the phone is told so', () => {
    const stopped: Session = {
      apiVersion: 'tether.dev/v1alpha1',
      kind: 'Session',
      metadata: { name: 'abc-20261123100000-7f3a', namespace: 'tether' },
      spec: { phone: '+14155550123', prompt: 'p', repo: { url: 'x' }, workspace: 'w' },
      status: {
        phase: 'Cancelled',
        startTime: '2026-11-23T10:00:00Z',
        completionTime: '2026-11-23T10:05:00Z',
        result: { costUsd: 2.5 },
      },
    };
    stopped.spec.decisions = [{ requestId: pending.id, action: 'reject', at: '2026-11-23T10:05:00Z' }];
    expect(finishedReason(stopped)).toBe(Reason.CostStopped);
    expect(finishedReason({ ...stopped, spec: { ...stopped.spec, cancel: true } })).toBe(Reason.Cancelled);
    const shown = owed(
      stopped,
      { n: 1, seq: 0, started: true },
      {
        now: Date.parse('2026-11-23T10:05:00Z'),
        progressBatchMs: 15_000,
        reminderBeforeMs: 300_000,
        defaults: SESSION_DEFAULTS,
      },
    );
    expect(shown.parts.map((p) => p.text)).toEqual([
      '🛑 Session 7f3a stopped at its cost pause ($2.50). The changes so far stay on the workspace; your queued ' +
        "commands still start, within today's budget.",
    ]);
  });

  it('a queued command refused over budget is not announced as starting', () => {
    const refused: Session = {
      apiVersion: 'tether.dev/v1alpha1',
      kind: 'Session',
      metadata: { name: 'abc-20261123100000-7f3b', namespace: 'tether' },
      spec: { phone: '+14155550123', prompt: 'add dark mode', repo: { url: 'x' }, workspace: 'w' },
      status: {
        phase: 'Failed',
        completionTime: '2026-11-23T10:05:00Z',
        result: { message: "today's budget is spent: $10.20 of $10.00; new commands start again after midnight (UTC)" },
        conditions: [
          {
            type: 'Finished',
            status: 'True',
            reason: Reason.OverBudget,
            message: '',
            lastTransitionTime: '2026-11-23T10:05:00Z',
          },
        ],
      },
    };
    const shown = owed(
      refused,
      { n: 1, seq: 0, queued: true },
      {
        now: Date.parse('2026-11-23T10:05:00Z'),
        progressBatchMs: 15_000,
        reminderBeforeMs: 300_000,
        defaults: SESSION_DEFAULTS,
      },
    );
    expect(shown.parts.map((p) => p.text)).toEqual([
      '💲 Not started: "add dark mode" — today\'s budget is spent: $10.20 of $10.00; new commands start again after ' +
        'midnight (UTC).',
    ]);
  });

  it(`reads continue / stop (and approve / reject) typed \
while the pause is open; other text gets the instructions`, () => {
    const context = { current: { name: 's1', phase: 'AwaitingApproval' as const, pending }, queued: 0 };
    const decided = (action: string) => ({ kind: 'decide', session: 's1', decision: { requestId: 'cost-1', action } });
    expect(route('Continue', context, 5)).toEqual(decided('approve'));
    expect(route('*continue*', context, 5)).toEqual(decided('approve'));
    expect(route('a', context, 5)).toEqual(decided('approve'));
    expect(route('stop', context, 5)).toEqual(decided('reject'));
    expect(route('reject', context, 5)).toEqual(decided('reject'));
    expect(route('keep going please', context, 5)).toEqual({ kind: 'instructions', pending });
  });

  it('is shown with the spend so far and the continue / stop quick replies', () => {
    const session: Session = {
      apiVersion: 'tether.dev/v1alpha1',
      kind: 'Session',
      metadata: { name: 'abc-20261123100000-7f3a', namespace: 'tether' },
      spec: { phone: '+14155550123', prompt: 'p', repo: { url: 'x' }, workspace: 'w', timeouts: { approval: '30m' } },
      status: { phase: 'AwaitingApproval', pending },
    };
    const shown = owed(
      session,
      { n: 1, seq: 0, started: true },
      {
        now: Date.parse(pending.createdAt),
        progressBatchMs: 15_000,
        reminderBeforeMs: 300_000,
        defaults: SESSION_DEFAULTS,
      },
    );
    expect(shown.parts).toEqual([
      {
        text:
          '💲 This run has used $2.04 so far. Continue? Reply *continue* or *stop* (the changes so far stay). ' +
          '(expires in 30 min)',
        actions: [
          { label: 'continue', reply: 'continue', payload: 'continue:cost-1' },
          { label: 'stop', reply: 'stop', payload: 'stop:cost-1' },
        ],
      },
    ]);
  });
});
