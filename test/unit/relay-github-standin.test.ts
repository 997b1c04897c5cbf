// The relay's GitHub client, poll and merge against the GitHub stand-in over a real forge: the poll
// tells a failing check once and then costs 304s; webhook and poll together act on each event once
// (the same keys); *merge* merges a green pull request in the bare repository, and says why not
// otherwise — a failing or pending commit status beside green check runs included.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeRedactor } from '../../common/log.ts';
import { startGitHubWorkbench, type GitHubWorkbench } from '../../local/github/workbench.ts';
import { GitHubClient } from '../../relay/github/client.ts';
import { eventsOf } from '../../relay/github/events.ts';
import { GitHubMerger } from '../../relay/github/merge.ts';
import { GitHubPoll } from '../../relay/github/poll.ts';
import { hasSeen } from '../../relay/pulls/keys.ts';
import type { PullEvent } from '../../relay/pulls/types.ts';
import { pullRecord, RecordsInMemory } from './github-fake.ts';

let bench: GitHubWorkbench;
let dir: string;
let records: RecordsInMemory;
let told: PullEvent[];
let number: number;
let head: string;

const handler = async (event: PullEvent) => {
  const record = await records.get(event.owner, event.repo, event.number);
  if (!record || hasSeen(record, event.key)) return;
  told.push(event);
  await records.update(event.owner, event.repo, event.number, (r) => r && { ...r, seen: [...r.seen, event.key] });
};
const client = () =>
  new GitHubClient({ apiUrl: bench.github.url, tokenFile: join(dir, 'token'), timeoutMs: 10_000 }, makeRedactor());
const poll = () =>
  new GitHubPoll({ client: client(), records, onEvent: handler, settings: { intervalMs: 1000, maxPerRound: 50 } });
const run = (name: string, conclusion?: 'success' | 'failure', summary = '') =>
  bench.github.createCheckRun('acme', 'sample', {
    headSha: head,
    name,
    ...(conclusion ? { conclusion } : { status: 'in_progress' as const }),
    output: { title: `${name} ${conclusion ?? 'running'}`, summary },
  });
/** What the webhook delivered so far, as the webhook's parser reads it, to the same handler. */
async function webhookDeliveries() {
  await bench.github.deliveriesSettled();
  for (const delivery of bench.receiver!.received)
    for (const e of eventsOf(delivery.event, delivery.payload)) await handler(e);
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-relay-'));
  bench = await startGitHubWorkbench({ webhookSecret: 'hook-secret' });
  writeFileSync(join(dir, 'token'), bench.token);
  head = await bench.push('tether/one', { 'notes.txt': 'one\n' });
  ({ number } = await bench.github.createPull('acme', 'sample', { title: 'Notes', head: 'tether/one', base: 'main' }));
  records = new RecordsInMemory();
  records.add(pullRecord(number, { owner: 'acme', repo: 'sample', branch: 'tether/one', headSha: head }));
  told = [];
});
afterEach(async () => {
  await bench.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the relay against the GitHub stand-in', () => {
  it('polls a failing check into one checksFailed; the next round is 304s', async () => {
    const test = await run('test', 'failure', 'greet.test.js: expected Hello');
    const p = poll();
    expect((await p.round()).events).toBe(1);
    expect(told).toEqual([
      expect.objectContaining({
        kind: 'checksFailed',
        key: `check_run:${test.id}:${head}`,
        checks: [{ id: test.id, name: 'test', excerpt: 'test failure\ngreet.test.js: expected Hello' }],
      }),
    ]);
    const before = bench.github.requests.length;
    expect(await p.round()).toMatchObject({ requests: 3, notModified: 3, events: 0 });
    expect(bench.github.requests.slice(before).map((r) => r.status)).toEqual([304, 304, 304]);
  });

  it('acts once on what both the webhook and the poll saw, whichever came first', async () => {
    await run('test', 'failure');
    await bench.github.submitReview('acme', 'sample', number, {
      user: 'rita',
      state: 'changes_requested',
      body: 'Rename it',
    });
    await webhookDeliveries();
    const byWebhook = told.map((e) => e.key);
    expect(told.map((e) => e.kind)).toEqual(['checksFailed', 'changesRequested']);
    await poll().round();
    expect(told.map((e) => e.key)).toEqual(byWebhook);

    await bench.github.closePull('acme', 'sample', number);
    await poll().round();
    await webhookDeliveries();
    expect(told.slice(2).map((e) => e.kind)).toEqual(['closed']);
  });

  it('merges a green pull request in the repository, at the head it checked', async () => {
    await run('test', 'success');
    const reply = await new GitHubMerger(client(), records).merge((await records.get('acme', 'sample', number))!, {
      name: 'Ada',
      merge: true,
    });
    expect(reply).toMatch(new RegExp(`^🎉 Merged pull request #${number} \\([0-9a-f]{7}\\)`));
    expect(await bench.sha('main')).not.toBe(head);
    expect(await bench.sha(`main:notes.txt`)).toBe(await bench.sha(`${head}:notes.txt`));
    expect((await records.get('acme', 'sample', number))!.state).toBe('merged');
  });

  it('says why not: checks running, a check failed, conflicts', async () => {
    const merge = async () =>
      new GitHubMerger(client(), records).merge((await records.get('acme', 'sample', number))!, undefined);
    const slow = await run('e2e');
    await run('lint', 'success');
    expect(await merge()).toBe(`Pull request #${number} cannot merge yet: 1 of 2 checks still running.`);
    await bench.github.updateCheckRun('acme', 'sample', slow.id, { conclusion: 'failure' });
    expect(await merge()).toBe(`Pull request #${number} cannot merge: a check failed (e2e).`);
    await bench.github.updateCheckRun('acme', 'sample', slow.id, { conclusion: 'success' });
    await bench.push('main', { 'notes.txt': 'something else\n' });
    expect(await merge()).toBe(`Pull request #${number} has conflicts with main; they must be resolved first.`);
    expect(bench.github.requests.filter((r) => r.method === 'PUT')).toEqual([]);
  });

  it('does not merge while a commit status fails or runs beside green check runs; merges once it passes', async () => {
    const merge = async () =>
      new GitHubMerger(client(), records).merge((await records.get('acme', 'sample', number))!, undefined);
    const status = (state: 'failure' | 'pending' | 'success') =>
      bench.github.createStatus('acme', 'sample', head, {
        state,
        context: 'ci/jenkins',
        description: `tests ${state}`,
      });
    await run('lint', 'success');
    await status('failure');
    expect(await merge()).toBe(`Pull request #${number} cannot merge: a check failed (ci/jenkins).`);
    await status('pending');
    expect(await merge()).toBe(`Pull request #${number} cannot merge yet: 1 of 2 checks still running.`);
    expect(bench.github.requests.filter((r) => r.method === 'PUT')).toEqual([]);
    await status('success');
    expect(await merge()).toMatch(new RegExp(`^🎉 Merged pull request #${number} `));
    expect(await bench.sha('main:notes.txt')).toBe(await bench.sha(`${head}:notes.txt`));
  });
});
