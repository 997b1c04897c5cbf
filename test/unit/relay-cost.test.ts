// A phone's spend per budget day, from its Sessions' reported costs.
import { describe, expect, it } from 'vitest';
import type { Session, SessionStatus } from '../../common/session/schema.ts';
import { budgetDay, spentToday, withinDailyBudget } from '../../common/session/budget.ts';
import { text } from '../../relay/text.ts';

const session = (created: string, status: SessionStatus): Session => ({
  apiVersion: 'tether.dev/v1alpha1',
  kind: 'Session',
  metadata: { name: 'abc-1', namespace: 'tether', creationTimestamp: created },
  spec: { phone: '+14155550123', prompt: 'p', repo: { url: 'x' }, workspace: 'ws-abc' },
  status,
});
const now = Date.parse('2026-11-23T10:00:00Z');

describe('spend per budget day', () => {
  const sessions = [
    session('2026-11-22T23:50:00Z', {
      phase: 'Succeeded',
      completionTime: '2026-11-23T00:05:00Z',
      result: { costUsd: 1.25 },
    }),
    session('2026-11-22T20:00:00Z', {
      phase: 'Succeeded',
      completionTime: '2026-11-22T21:00:00Z',
      result: { costUsd: 4 },
    }),
    session('2026-11-23T09:00:00Z', { phase: 'Working', startTime: '2026-11-23T09:00:01Z', result: { costUsd: 0.5 } }),
    session('2026-11-23T09:30:00Z', { phase: 'Queued' }),
  ];

  it("sums what ended today (UTC), and what runs now, of the phone's Sessions", () => {
    expect(spentToday(sessions, now, 'UTC')).toBe(1.75);
  });

  it('moves the day boundary with the time zone', () => {
    // 10:00 UTC is 21:00 in Sydney: its day began at 13:00 UTC the day before, so 21:00 UTC then counts too
    expect(budgetDay(now, 'Australia/Sydney')).toBe('2026-11-23');
    expect(spentToday(sessions, now, 'Australia/Sydney')).toBe(5.75);
    // in Los Angeles it is 02:00 on the 23rd: 00:05 UTC was 16:05 on the 22nd there
    expect(spentToday(sessions, now, 'America/Los_Angeles')).toBe(0.5);
    expect(spentToday(sessions, Date.parse('2026-11-23T07:59:00Z'), 'America/Los_Angeles')).toBe(5.25);
  });

  it('ignores absurd reports: negative, not a number, infinite', () => {
    const absurd = [-3, Number.NaN, Number.POSITIVE_INFINITY, 'lots' as never].map((costUsd) =>
      session('2026-11-23T09:00:00Z', {
        phase: 'Succeeded',
        completionTime: '2026-11-23T09:10:00Z',
        result: { costUsd },
      }),
    );
    expect(spentToday(absurd, now, 'UTC')).toBe(0);
  });

  it('refuses at the budget, never with no budget, and says how much was spent', () => {
    expect(withinDailyBudget(9.99, { dailyUsd: 10 })).toBe(true);
    expect(withinDailyBudget(10, { dailyUsd: 10 })).toBe(false);
    expect(withinDailyBudget(1e6, { dailyUsd: 0 })).toBe(true);
    expect(text.overBudget(10.2, { dailyUsd: 10, timeZone: 'Europe/Berlin' })).toBe(
      "Today's budget is spent: $10.20 of $10.00. New commands start again after midnight (Europe/Berlin). Commands " +
        'already running still finish; queued ones do not start.',
    );
    expect(text.spendToday(1.2, 10)).toBe('Today: $1.20 of $10.00');
    expect(text.spendToday(1.2, 0)).toBe('Today: $1.20');
  });
});
