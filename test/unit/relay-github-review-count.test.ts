// A review's line comments: the webhook's payload has no count, so the notifier reads it from GitHub
// when the relay has a token; a comment with neither words nor line comments tells nothing.
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { makeRedactor } from '../../common/log.ts';
import { eventsOf } from '../../relay/github/events.ts';
import { PullNotifier } from '../../relay/github/notify.ts';
import { createMetrics } from '../../relay/metrics.ts';
import type { Part } from '../../relay/outbound/owed.ts';
import { PhoneLanes } from '../../relay/phone-lane.ts';
import type { PullEvent } from '../../relay/pulls/types.ts';
import { MemoryRecords, PHONE, SECRET, payloads, pullRecord } from './github-fixtures.ts';

function notifier(countComments?: (event: PullEvent, reviewId: number) => Promise<number>) {
  const sent: Part[][] = [];
  const records = new MemoryRecords([pullRecord()]);
  const n = new PullNotifier({
    records,
    outbox: { deliver: async (_phone, parts) => void sent.push(parts) },
    lanes: new PhoneLanes(),
    isRecipient: (phone) => phone === PHONE,
    redact: makeRedactor([SECRET]),
    metrics: createMetrics(),
    logger: pino({ level: 'silent' }),
    countComments,
  });
  return { n, sent, records };
}

const review = (overrides: Record<string, unknown>) => eventsOf('pull_request_review', payloads.review(overrides))[0]!;
const textOf = (parts: Part[]) => JSON.stringify(parts);

describe('a review notice counts its line comments', () => {
  it('says how many comments a review left on the code, read from GitHub', async () => {
    const asked: number[] = [];
    const { n, sent } = notifier(async (_event, reviewId) => (asked.push(reviewId), 3));
    expect(await n.notify(review({}))).toBe('told');
    expect(asked).toEqual([9001]);
    expect(textOf(sent[0]!)).toContain('asked for changes on pull request #7 (web) (3 comments on the code)');
  });

  it('tells a comment made only on the code, and drops one with nothing in it', async () => {
    const lines = notifier(async () => 1);
    expect(await lines.n.notify(review({ state: 'commented', body: '' }))).toBe('told');
    expect(textOf(lines.sent[0]!)).toContain('commented on pull request #7 (web) (1 comment on the code)');
    const empty = notifier(async () => 0);
    expect(await empty.n.notify(review({ state: 'commented', body: '', id: 9002 }))).toBe('empty');
    expect(empty.sent).toEqual([]);
    expect((await empty.records.only()).notices).toEqual([]);
  });

  it('without a token: no count, and a comment with no words tells nothing', async () => {
    const { n, sent } = notifier();
    expect(await n.notify(review({ state: 'commented', body: '' }))).toBe('empty');
    expect(await n.notify(review({ id: 9003 }))).toBe('told');
    expect(textOf(sent[0]!)).not.toContain('on the code');
  });

  it('a GitHub that cannot be read fails the event (the delivery is tried again), nothing half-told', async () => {
    const { n, sent, records } = notifier(async () => Promise.reject(new Error('GitHub GET … no answer within 10s')));
    await expect(n.notify(review({}))).rejects.toThrow('no answer');
    expect(sent).toEqual([]);
    expect((await records.only()).seen).toEqual([]);
  });
});
