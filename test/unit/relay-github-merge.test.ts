// *merge* from the phone: merged when the install and the person allow it and the head is green and
// mergeable (PUT with that head's sha); otherwise one line saying why, and no merge attempted.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeRedactor } from '../../common/log.ts';
import { GitHubClient } from '../../relay/github/client.ts';
import { GitHubMerger, mergerFor, mergeRightsOf } from '../../relay/github/merge.ts';
import {
  RecordsInMemory,
  checkRun,
  fakePull,
  pullKey,
  pullRecord,
  startFakeGitHub,
  type FakeGitHub,
  type FakePull,
} from './github-fake.ts';

const HEAD = 'c'.repeat(40);
let dir: string;
let gh: FakeGitHub;
let records: RecordsInMemory;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-merge-'));
  writeFileSync(join(dir, 'token'), 'relay-token');
  gh = await startFakeGitHub(() => 'relay-token');
  records = new RecordsInMemory();
  records.add(pullRecord(5));
});
afterEach(async () => {
  await gh.close();
  rmSync(dir, { recursive: true, force: true });
});

const client = () =>
  new GitHubClient({ apiUrl: gh.url, tokenFile: join(dir, 'token'), timeoutMs: 5000 }, makeRedactor());
const merger = () => new GitHubMerger(client(), records);

async function mergeWith(pull: Partial<FakePull>, person?: { name: string; merge?: boolean }) {
  gh.pulls.set(pullKey('acme', 'web', 5), fakePull(5, HEAD, pull));
  return merger().merge(pullRecord(5), person);
}
const merges = () => gh.requests.filter((r) => r.method === 'PUT');

describe('GitHubMerger', () => {
  it('merges a green, mergeable pull request at the head it checked', async () => {
    const reply = await mergeWith(
      {
        checkRuns: [
          checkRun(HEAD, 'test', 'success'),
          checkRun(HEAD, 'lint', 'neutral'),
          checkRun(HEAD, 'e2e', 'skipped'),
        ],
      },
      { name: 'Ada', merge: true },
    );
    expect(reply).toBe('🎉 Merged pull request #5 (f00dfee). Your next command there starts from the base branch.');
    expect(merges()).toEqual([
      expect.objectContaining({ path: '/repos/acme/web/pulls/5/merge', status: 200, body: { sha: HEAD } }),
    ]);
    expect(gh.pulls.get(pullKey('acme', 'web', 5))!.merged).toBe(true);
    expect((await records.get('acme', 'web', 5))!.state).toBe('merged');
  });

  it('says how many checks are still running', async () => {
    const runs = [
      checkRun(HEAD, 'a', 'success'),
      checkRun(HEAD, 'b', null),
      checkRun(HEAD, 'c', null),
      checkRun(HEAD, 'd', 'success'),
      checkRun(HEAD, 'e', 'success'),
    ];
    expect(await mergeWith({ checkRuns: runs })).toBe('Pull request #5 cannot merge yet: 2 of 5 checks still running.');
    expect(merges()).toEqual([]);
  });

  it('names the failed checks', async () => {
    const runs = [checkRun(HEAD, 'lint', 'failure'), checkRun(HEAD, 'test', 'timed_out'), checkRun(HEAD, 'e2e', null)];
    expect(await mergeWith({ checkRuns: runs })).toBe('Pull request #5 cannot merge: 2 checks failed (lint, test).');
    expect(merges()).toEqual([]);
  });

  it('does not count the checks of an older head', async () => {
    const runs = [checkRun('d'.repeat(40), 'lint', 'failure'), checkRun(HEAD, 'lint', 'success')];
    expect(await mergeWith({ checkRuns: runs })).toMatch(/^🎉 Merged pull request #5/);
  });

  it("weighs the head's commit statuses beside its check runs", async () => {
    const green = [checkRun(HEAD, 'test', 'success')];
    const status = (context: string, state: string) => ({ context, state, description: `${context} ${state}` });
    expect(
      await mergeWith({ checkRuns: green, statuses: [status('ci/jenkins', 'failure'), status('ci/lint', 'error')] }),
    ).toBe('Pull request #5 cannot merge: 2 checks failed (ci/jenkins, ci/lint).');
    expect(
      await mergeWith({ checkRuns: green, statuses: [status('ci/a', 'pending'), status('ci/b', 'success')] }),
    ).toBe('Pull request #5 cannot merge yet: 1 of 3 checks still running.');
    expect(merges()).toEqual([]);
    expect(await mergeWith({ statuses: [status('ci/jenkins', 'success')] })).toMatch(/^🎉 Merged pull request #5/);
  });

  it('says there are conflicts, or that GitHub is still working it out', async () => {
    const green = [checkRun(HEAD, 'test', 'success')];
    expect(await mergeWith({ checkRuns: green, mergeable: false })).toBe(
      'Pull request #5 has conflicts with main; they must be resolved first.',
    );
    expect(await mergeWith({ checkRuns: green, mergeable: null })).toBe(
      'GitHub is still working out whether pull request #5 can merge; send merge again in a minute.',
    );
    expect(merges()).toEqual([]);
  });

  it('does not merge a head no check has run on', async () => {
    expect(await mergeWith({})).toBe(
      'Pull request #5 cannot merge yet: no checks have run on its head (ccccccc), so nothing shows it green.',
    );
  });

  it('refuses when the install or the person does not allow it, asking GitHub nothing', async () => {
    const green = { checkRuns: [checkRun(HEAD, 'test', 'success')] };
    expect(mergerFor('never', client(), records)).toBeUndefined();
    expect(mergerFor('whenGreen', undefined, records)).toBeUndefined();
    expect(mergerFor('whenGreen', client(), records)).toBeInstanceOf(GitHubMerger);
    expect(await mergeWith(green, { name: 'Ada' })).toBe(
      "Ada may not merge: the install's people list does not give merge rights.",
    );
    expect(gh.requests).toEqual([]);
    expect((await records.get('acme', 'web', 5))!.state).toBe('open');
  });

  it('says a merged or closed pull request is so', async () => {
    expect(await mergeWith({ state: 'closed', merged: true })).toBe('Pull request #5 is already merged.');
    expect(await mergeWith({ state: 'closed' })).toBe('Pull request #5 is closed; it cannot be merged.');
  });

  it('tells a head that moved between the check and the merge', async () => {
    gh.pulls.set(pullKey('acme', 'web', 5), fakePull(5, HEAD, { checkRuns: [checkRun(HEAD, 'test', 'success')] }));
    const m = merger();
    const moved = gh.requests.length;
    // the fake moves the head as soon as the checks were read
    const original = gh.requests.push.bind(gh.requests);
    gh.requests.push = (...items) => {
      if (items.some((r) => r.path.endsWith('/check-runs')))
        gh.pulls.get(pullKey('acme', 'web', 5))!.head.sha = 'e'.repeat(40);
      return original(...items);
    };
    expect(await m.merge(pullRecord(5), undefined)).toBe(
      'Pull request #5 changed while merging (a new commit); its checks must pass on the new head first.',
    );
    expect(gh.requests.slice(moved).map((r) => r.status)).toEqual([200, 200, 200, 409]);
  });

  it('says GitHub could not be reached, in words', async () => {
    writeFileSync(join(dir, 'token'), 'another-token');
    expect(await mergeWith({})).toBe(
      'Could not merge pull request #5: GitHub GET /repos/acme/web/pulls/5 was refused (401): Bad credentials',
    );
  });

  it("gives every phone its people list's merge right, a phone the list leaves out none", () => {
    const people = {
      mayMerge: (phone: string) => phone === '+14155550100',
      requester: (phone: string) => (phone === '+14155550100' ? { name: 'Ada' } : undefined),
    };
    const rights = mergeRightsOf(people);
    expect(rights('+14155550100')).toEqual({ phone: '+14155550100', name: 'Ada', merge: true });
    expect(rights('+14155550199')).toEqual({ phone: '+14155550199', name: '+1415•••0199', merge: false });
  });
});
