// *fix*, *ignore*, *details*, *merge* on pull request notices: tapped (naming the notice) or typed
// (the newest unanswered notice of the phone's current pull request); once, and only by its phone.
import { describe, expect, it } from 'vitest';
import { makeRedactor } from '../../common/log.ts';
import { GithubPullActions, type Merger, type Person } from '../../relay/github/actions.ts';
import { eventsOf } from '../../relay/github/events.ts';
import { applyEvent } from '../../relay/github/notices.ts';
import type { PullRecord } from '../../relay/pulls/types.ts';
import { HEAD, MemoryRecords, PHONE, payloads, pullRecord } from './github-fixtures.ts';

const AT = '2026-11-27T02:00:00.000Z';
const OTHER_PHONE = '+15555550999';
const redact = makeRedactor();

/** A record that has been told of a failing check (notice 1) and then a review asking for changes (notice 2). */
function told(overrides: Partial<PullRecord> = {}): PullRecord {
  let record = pullRecord(overrides);
  for (const [name, payload] of [
    ['check_run', payloads.checkFailed()],
    ['pull_request_review', payloads.review()],
  ] as const)
    record = applyEvent(record, eventsOf(name, payload)[0]!, AT, redact).record;
  return record;
}

function actionsOf(records: MemoryRecords, merger?: Merger, people: Person[] = []) {
  return new GithubPullActions({
    records,
    merger,
    personOf: (phone) => people.find((p) => p.phone === phone),
    now: () => Date.parse(AT),
  });
}

describe('GithubPullActions', () => {
  it('fix tapped on a failing check: a command on the pull request branch carrying the runs, once', async () => {
    const records = new MemoryRecords([told()]);
    const [checks] = (await records.only()).notices;
    const actions = actionsOf(records);
    expect(await actions.act(PHONE, 'fix', checks!.id)).toEqual({
      kind: 'command',
      prompt: 'Fix the failing checks on pull request #7',
      repo: 'web',
      pullRequest: { number: 7, branch: 'tether/cmd-1a2b', url: 'https://github.com/acme/web/pull/7' },
      fix: { kind: 'checks', headSha: HEAD, checkRuns: [101] },
    });
    expect((await records.only()).fixing).toEqual({ headSha: HEAD, since: AT });
    expect((await records.only()).notices[0]!.answered).toBe('fix');
    expect(await actions.act(PHONE, 'fix', checks!.id)).toEqual({
      kind: 'reply',
      text: 'That notice on pull request #7 was already answered (*fix*).',
    });
  });

  it('fix typed: the newest unanswered notice (the review) of the current pull request', async () => {
    const records = new MemoryRecords([told()]);
    const outcome = await actionsOf(records).act(PHONE, 'fix', undefined);
    expect(outcome).toMatchObject({
      kind: 'command',
      prompt: 'Address the review on pull request #7',
      fix: { kind: 'review', headSha: HEAD, reviewId: 9001 },
    });
  });

  it("a tap on another phone's notice, or on a notice id never made, acts on nothing", async () => {
    const records = new MemoryRecords([told()]);
    const [checks] = (await records.only()).notices;
    const actions = actionsOf(records);
    const gone = { kind: 'reply', text: 'That notice is no longer open. Reply *prs* to list your pull requests.' };
    expect(await actions.act(OTHER_PHONE, 'fix', checks!.id)).toEqual(gone);
    expect(await actions.act(PHONE, 'fix', 'pr-00000000-1')).toEqual(gone);
    expect((await records.only()).notices.map((n) => n.answered)).toEqual([undefined, undefined]);
    expect((await records.only()).fixing).toBeUndefined();
  });

  it('ignore answers the notice; details sends its longer text and leaves it open', async () => {
    const records = new MemoryRecords([told()]);
    const [checks, review] = (await records.only()).notices;
    const actions = actionsOf(records);
    const details = await actions.act(PHONE, 'details', checks!.id);
    expect(details).toMatchObject({
      kind: 'reply',
      text: expect.stringContaining('Check *ci / lint* on commit aaaaaaa'),
    });
    expect(await actions.act(PHONE, 'ignore', review!.id)).toEqual({
      kind: 'reply',
      text: 'OK, nothing is done about that notice on pull request #7.',
    });
    expect((await records.only()).notices.map((n) => n.answered)).toEqual([undefined, 'ignore']);
    expect(await actions.act(PHONE, 'fix', undefined)).toMatchObject({ kind: 'command', fix: { kind: 'checks' } });
    expect(await actions.act(PHONE, 'ignore', undefined)).toEqual({
      kind: 'reply',
      text: 'No pull request notice is waiting for an answer. Reply *prs* to list your pull requests.',
    });
  });

  it('nothing is done on a merged pull request, or for a phone without an open one', async () => {
    const records = new MemoryRecords([{ ...told(), state: 'merged' }]);
    const actions = actionsOf(records);
    const id = (await records.only()).notices[0]!.id;
    expect(await actions.act(PHONE, 'fix', id)).toEqual({
      kind: 'reply',
      text: 'Pull request #7 is merged: nothing more is done on it.',
    });
    expect(await actions.act(PHONE, 'fix', undefined)).toEqual({
      kind: 'reply',
      text: 'You have no open pull request. Reply *prs* to list yours.',
    });
  });

  it('merge goes to the Merger with the person; without one it is off', async () => {
    const records = new MemoryRecords([told()]);
    expect(await actionsOf(records).act(PHONE, 'merge', undefined)).toEqual({
      kind: 'reply',
      text: 'Merging from the phone is not enabled on this install.',
    });
    const asked: Array<[number, string | undefined]> = [];
    const merger: Merger = {
      merge: async (record, person) => (asked.push([record.number, person?.name]), 'Merged pull request #7.'),
    };
    const people = [{ phone: PHONE, name: 'Ada', merge: true }];
    expect(await actionsOf(records, merger, people).act(PHONE, 'merge', undefined)).toEqual({
      kind: 'reply',
      text: 'Merged pull request #7.',
    });
    expect(asked).toEqual([[7, 'Ada']]);
  });
});
