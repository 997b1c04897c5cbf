// The progress cadence and the outbound budgets, through the pure plan: whole results compared.
import { describe, expect, it } from 'vitest';
import { SESSION_DEFAULTS } from '../../common/session/defaults.ts';
import type { ProgressItem, Session, SessionStatus } from '../../common/session/schema.ts';
import type { Delivered } from '../../relay/delivered-state.ts';
import { owed } from '../../relay/outbound/owed.ts';
import { text } from '../../relay/text.ts';

const T0 = Date.parse('2026-11-23T10:00:00Z');
const options = {
  progressBatchMs: 15_000,
  progressMaxGapMs: 60_000,
  progressMessages: 6,
  sessionMessages: 30,
  reminderBeforeMs: 300_000,
  defaults: SESSION_DEFAULTS,
};
const items = (from: number, to: number): ProgressItem[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({
    seq: from + i,
    at: new Date(T0).toISOString(),
    text: `step ${from + i}`,
  }));
const session = (status: SessionStatus): Session => ({
  apiVersion: 'tether.dev/v1alpha1',
  kind: 'Session',
  metadata: { name: 'abc-20261123100000-7f3a', namespace: 'tether' },
  spec: { phone: '+14155550123', prompt: 'p', repo: { url: 'x' }, workspace: 'ws-abc', timeouts: { approval: '30m' } },
  status,
});

/** A run that reports one more step every second for `seconds`; the relay looks every second. */
function simulate(seconds: number, budgets: Partial<typeof options> = {}) {
  let told: Delivered = { n: 1, seq: 0, started: true };
  const sent: { at: number; text: string }[] = [];
  for (let s = 1; s <= seconds; s++) {
    const now = T0 + s * 1000;
    const result = owed(session({ phase: 'Working', progress: items(1, s).slice(-50) }), told, {
      ...options,
      ...budgets,
      now,
    });
    for (const part of result.parts) sent.push({ at: now - T0, text: part.text! });
    told = result.next;
  }
  return { sent, told };
}

describe('progress cadence', () => {
  it('sends the first step at once, then batches at 15 s, 30 s, 60 s, 60 s gaps, six messages at most', () => {
    const { sent, told } = simulate(600);
    expect(sent.map((m) => m.at)).toEqual([1_000, 16_000, 46_000, 106_000, 166_000, 226_000]);
    expect(sent[0]!.text).toBe('⏳ step 1');
    expect(sent[1]!.text).toBe(
      `⏳ …9 earlier steps\n${[10, 11, 12, 13, 14, 15, 16]
        .slice(-6)
        .map((n) => `⏳ step ${n}`)
        .join('\n')}`,
    );
    expect(sent.at(-1)!.text.endsWith(`\n${text.progressOnStatus()}`)).toBe(true);
    expect(sent.slice(0, -1).some((m) => m.text.includes(text.progressOnStatus()))).toBe(false);
    expect(told).toMatchObject({ seq: 600, progressSent: 6, progressAt: T0 + 226_000, messages: 6 });
  });

  it('waits for its turn: wakeAt is the stored time of the last message plus the gap', () => {
    const told: Delivered = { n: 3, seq: 2, started: true, progressSent: 2, progressAt: T0, messages: 2 };
    const early = owed(session({ phase: 'Working', progress: items(1, 3) }), told, { ...options, now: T0 + 29_999 });
    expect(early).toEqual({ parts: [], next: told, wakeAt: T0 + 30_000 });
    const due = owed(session({ phase: 'Working', progress: items(1, 3) }), told, { ...options, now: T0 + 30_000 });
    expect(due).toEqual({
      parts: [{ text: '⏳ step 3' }],
      next: { n: 4, seq: 3, started: true, progressSent: 3, progressAt: T0 + 30_000, messages: 3 },
      wakeAt: undefined,
    });
  });

  it('a prompt flushes waiting progress into its own first message, not a message of its own', () => {
    const told: Delivered = { n: 3, seq: 1, started: true, progressSent: 1, progressAt: T0, messages: 1 };
    const pending = {
      id: 'q1',
      kind: 'question' as const,
      questions: [{ question: 'Which?', options: [{ label: 'a' }] }],
      createdAt: new Date(T0).toISOString(),
    };
    const result = owed(session({ phase: 'AwaitingApproval', progress: items(1, 3), pending }), told, {
      ...options,
      now: T0 + 2_000,
    });
    expect(result.parts.map((p) => p.text)).toEqual([`⏳ step 2\n⏳ step 3\n${text.pending(pending, '30m')}`]);
    expect(result.next).toMatchObject({ seq: 3, progressSent: 1, pending: 'q1', messages: 2 });
  });

  it("past the run's progress budget, progress is passed over and the result comes alone", () => {
    const told: Delivered = { n: 9, seq: 40, started: true, progressSent: 6, progressAt: T0, messages: 6 };
    const result = owed(session({ phase: 'Succeeded', progress: items(1, 50), result: { summary: 'done' } }), told, {
      ...options,
      now: T0 + 1,
    });
    expect(result.parts).toEqual([{ text: '✅ Done (session 7f3a).\ndone' }]);
    expect(result.next).toMatchObject({ seq: 50, progressSent: 6, done: 'Succeeded', messages: 7 });
  });

  it('a thousand tiny steps in one batch make one message within 1,600 characters', () => {
    const many = Array.from({ length: 50 }, (_, i) => ({
      seq: 950 + i,
      at: new Date(T0).toISOString(),
      text: 'x'.repeat(500),
    }));
    const result = owed(
      session({ phase: 'Working', progress: many }),
      { n: 1, seq: 0, started: true },
      { ...options, now: T0 },
    );
    expect(result.parts).toHaveLength(1);
    expect(result.parts[0]!.text!.split('\n')).toHaveLength(7);
    expect(result.parts[0]!.text!.length).toBeLessThanOrEqual(3_200); // 6 × 500: split into two messages at most
  });
});

describe('the Session-wide message budget', () => {
  const pending = { id: 'c1', kind: 'changes' as const, summary: 's', createdAt: new Date(T0).toISOString() };
  const page = (request: number) => ({
    kind: 'diff' as const,
    ref: 'tether/abc-20261123100000-7f3a/d.png',
    contentType: 'image/png' as const,
    caption: `f (${request})`,
    request,
  });

  it('drops optional messages past the budget, says so once, and still sends prompts and the result', () => {
    const told: Delivered = { n: 20, seq: 0, started: true, pending: 'c1', reminded: 'c1', diffs: 0, messages: 29 };
    const waiting = session({
      phase: 'AwaitingApproval',
      pending,
      result: { media: [page(1), page(2), page(3)], diffAnswered: 3 },
    });
    const first = owed(waiting, told, { ...options, now: T0 });
    expect(first.parts).toEqual([{ media: page(1), text: 'f (1)' }, { text: text.sessionCapped(30) }]);
    expect(first.next).toMatchObject({ diffs: 3, messages: 31, capped: true });

    const next = { ...pending, id: 't2', kind: 'tool' as const, tool: 'Bash', input: '{"command":"ls"}' };
    const prompt = owed(session({ phase: 'AwaitingApproval', pending: next }), first.next, { ...options, now: T0 });
    expect(prompt.parts.map((p) => p.text)).toEqual([text.pending(next, '30m')]);
    const done = owed(session({ phase: 'Rejected' }), prompt.next, { ...options, now: T0 });
    expect(done.parts.map((p) => p.text)).toEqual(['↩️ Changes undone. Send a new command when you are ready.']);
    expect(done.next).toMatchObject({ messages: 33, capped: true });
  });
});
