// What an event does to a pull request's record, and the phone's message: GitHub's text is hostile
// data there (cut, no formatting, no hidden characters, no secrets, no live links).
import { describe, expect, it } from 'vitest';
import { makeRedactor } from '../../common/log.ts';
import { applyEvent, noticeMessage } from '../../relay/github/notices.ts';
import { pullKeyHash } from '../../relay/pulls/keys.ts';
import { eventsOf } from '../../relay/github/events.ts';
import type { PullEvent } from '../../relay/pulls/types.ts';
import { PULL_NOTICES_KEPT, PULL_SEEN_KEPT } from '../../relay/pulls/types.ts';
import { HEAD, NEXT_HEAD, SECRET, payloads, pullRecord } from './github-fixtures.ts';

const AT = '2026-11-27T02:00:00.000Z';
const redact = makeRedactor([SECRET]);
const one = (name: string, payload: unknown): PullEvent => eventsOf(name, payload)[0]!;
const failed = (o: Parameters<typeof payloads.checkFailed>[0] = {}) => one('check_run', payloads.checkFailed(o));

describe('applyEvent', () => {
  it('a failing check: a notice with the run, the head and the details; its key joins seen', () => {
    const { record, outcome, notice } = applyEvent(pullRecord(), failed(), AT, redact);
    expect(outcome).toBe('told');
    expect(notice).toMatchObject({
      id: `pr-${pullKeyHash('acme', 'web', 7)}-1`,
      kind: 'checksFailed',
      key: `check_run:101:${HEAD}`,
      headSha: HEAD,
      checkRuns: [101],
      sent: false,
    });
    expect(notice!.details).toContain('│ src/nav.ts:3 missing semicolon');
    expect(record.seen).toEqual([`check_run:101:${HEAD}`]);
    expect(record.notices).toEqual([notice]);
  });

  it('the same event again changes nothing and finds its notice', () => {
    const first = applyEvent(pullRecord(), failed(), AT, redact);
    const again = applyEvent(first.record, failed(), AT, redact);
    expect(again.outcome).toBe('seen');
    expect(again.record).toBe(first.record);
    expect(again.notice).toEqual(first.notice);
  });

  it('numbers notices on; keeps the last PULL_NOTICES_KEPT notices and PULL_SEEN_KEPT keys', () => {
    let record = pullRecord();
    for (let id = 1; id <= PULL_SEEN_KEPT + 5; id++) record = applyEvent(record, failed({ id }), AT, redact).record;
    expect(record.notices).toHaveLength(PULL_NOTICES_KEPT);
    expect(record.notices.at(-1)!.id).toMatch(new RegExp(`-${PULL_SEEN_KEPT + 5}$`));
    expect(record.seen).toHaveLength(PULL_SEEN_KEPT);
    expect(record.seen.at(-1)).toBe(`check_run:${PULL_SEEN_KEPT + 5}:${HEAD}`);
  });

  it('a failure on a head GitHub said was replaced is stale: remembered, not told', () => {
    const moved = applyEvent(pullRecord(), one('pull_request', payloads.synchronize()), AT, redact);
    expect(moved).toMatchObject({ outcome: 'recorded', record: { headSha: NEXT_HEAD } });
    const late = applyEvent(moved.record, failed({ sha: HEAD }), AT, redact);
    expect(late.outcome).toBe('stale');
    expect(late.record.notices).toEqual([]);
    expect(applyEvent(moved.record, failed({ sha: NEXT_HEAD }), AT, redact).outcome).toBe('told');
  });

  it('checks passing are told only after a fix, on a later head, and end the fix', () => {
    const passed = one('check_suite', payloads.suitePassed({ sha: NEXT_HEAD }));
    expect(applyEvent(pullRecord(), passed, AT, redact).outcome).toBe('recorded');
    const onFixedHead = pullRecord({ fixing: { headSha: NEXT_HEAD, since: AT } });
    expect(applyEvent(onFixedHead, passed, AT, redact).outcome).toBe('recorded');
    const fixing = pullRecord({ fixing: { headSha: HEAD, since: AT } });
    const told = applyEvent(fixing, passed, AT, redact);
    expect(told.outcome).toBe('told');
    expect(told.record.fixing).toBeUndefined();
  });

  it('merged closes the record; nothing is told about a pull request after that', () => {
    const merged = applyEvent(pullRecord(), one('pull_request', payloads.closed(true)), AT, redact);
    expect(merged).toMatchObject({ outcome: 'told', record: { state: 'merged' } });
    expect(applyEvent(merged.record, failed(), AT, redact).outcome).toBe('notOpen');
  });
});

describe('noticeMessage: GitHub text is data', () => {
  const message = (event: PullEvent) => {
    const { record, notice } = applyEvent(pullRecord(), event, AT, redact);
    return { part: noticeMessage(record, event, notice!, redact), details: notice!.details ?? '' };
  };

  it('no formatting marks, hidden characters, secrets or live links reach the phone', () => {
    const summary = [
      '*Reply approve to continue* _now_ ~really~ ```code``` hidden\u202Egnp.exe\u200B',
      `token ghp_${'A'.repeat(36)} and the secret ${SECRET}`,
      '> log in at https://evil.example/login',
    ].join('\n');
    const { part, details } = message(failed({ name: '*ci* `lint`', summary }));
    for (const text of [part.text!, details]) {
      expect(text).not.toMatch(/ghp_A|webhook-secret/);
      expect(text).not.toContain('https://evil');
      expect(text).toContain('https[:]//evil.example/login');
      expect(text).not.toMatch(/[\u202E\u200B]/);
      expect(text).toContain('<U+202E>');
      expect(text).toContain('│ Reply approve to continue now really code hidden<U+202E>gnp.exe<U+200B>');
      expect(text).toContain('│ token [redacted] and the secret [redacted]');
      expect(text).toContain('│ > log in at https[:]//evil.example/login');
    }
    expect(part.text).toMatch(/^❌ Check \*ci lint\* failed on pull request #7 \(web\)\.\n/);
    expect(part.text).toMatch(/\nReply \*fix\* to have the agent fix it, \*details\* for more, or \*ignore\*\.$/);
  });

  it('keeps snake_case names whole', () => {
    expect(message(failed({ name: 'unit_tests (node_24)' })).part.text).toContain('*unit_tests (node_24)*');
  });

  it('a long output is cut to a few lines in the notice and more in the details, within a quick reply body', () => {
    const summary = Array.from({ length: 40 }, (_, i) => `error ${i}: ${'x'.repeat(25)}`).join('\n');
    const { part, details } = message(failed({ summary, name: 'n'.repeat(100) }));
    expect(part.text!.length).toBeLessThan(1024);
    expect(part.text!.split('\n').filter((l) => l.startsWith('│'))).toHaveLength(5); // 4 lines and "…"
    expect(part.text).toContain('n'.repeat(59) + '…');
    expect(details.split('\n').filter((l) => l.startsWith('│ error')).length).toBeGreaterThan(4);
    expect(details.length).toBeLessThan(1600);
  });

  it('a review: who and the gist, answers bound to the notice; merged and closed: just the text', () => {
    const review = message(one('pull_request_review', payloads.review({ body: 'Rename *it*.\nAlso this.' })));
    expect(review.part.text).toBe(
      '✋ octocat asked for changes on pull request #7 (web).\n│ Rename it.\n│ Also this.\n' +
        'Reply *fix* to have the agent address the review, *details* for more, or *ignore*.',
    );
    expect(review.part.actions!.map((a) => [a.label, a.payload])).toEqual([
      ['fix', `fix:pr-${pullKeyHash('acme', 'web', 7)}-1`],
      ['ignore', `ignore:pr-${pullKeyHash('acme', 'web', 7)}-1`],
      ['details', `details:pr-${pullKeyHash('acme', 'web', 7)}-1`],
    ]);
    const merged = message(one('pull_request', payloads.closed(true))).part;
    expect(merged).toEqual({
      text: '🎉 Pull request #7 (web) was merged by octocat. Your next command there starts from the base branch.',
    });
  });
});
