// The poll of open pull requests: the same PullEvents as the webhook, each once; an unchanged pull
// request costs three 304s and no write; bounded and round-robin; a failure on one is told, not fatal.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger, makeRedactor } from '../../common/log.ts';
import { GitHubClient } from '../../relay/github/client.ts';
import { GitHubPoll } from '../../relay/github/poll.ts';
import { eventKeyDigest } from '../../relay/pulls/keys.ts';
import type { PullEvent } from '../../relay/pulls/types.ts';
import {
  checkRun,
  fakePull,
  pullKey,
  pullRecord,
  RecordsInMemory,
  startFakeGitHub,
  type FakeGitHub,
} from './github-fake.ts';

const HEAD = 'a'.repeat(40);
let dir: string;
let gh: FakeGitHub;
let records: RecordsInMemory;
let told: PullEvent[];

/** The webhook handler's part: acts on an event and remembers its key. */
const handler = async (event: PullEvent) => {
  told.push(event);
  await records.update(event.owner, event.repo, event.number, (r) => r && { ...r, seen: [...r.seen, event.key] });
};

function poll(maxPerRound = 50, onEvent = handler, now = Date.now) {
  const client = new GitHubClient({ apiUrl: gh.url, tokenFile: join(dir, 'token'), timeoutMs: 5000 }, makeRedactor());
  return new GitHubPoll({ client, records, onEvent, settings: { intervalMs: 1000, maxPerRound }, now });
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-poll-'));
  writeFileSync(join(dir, 'token'), 'relay-token');
  gh = await startFakeGitHub(() => 'relay-token');
  records = new RecordsInMemory();
  told = [];
});
afterEach(async () => {
  await gh.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GitHubPoll', () => {
  it('turns a failing check into one checksFailed; the next round is three 304s and writes nothing', async () => {
    const lint = checkRun(HEAD, 'lint', 'failure', 'src/a.ts:3 missing semicolon\nsecond line');
    gh.pulls.set(
      pullKey('acme', 'web', 7),
      fakePull(7, HEAD, { checkRuns: [checkRun(HEAD, 'test', 'success'), lint] }),
    );
    records.add(pullRecord(7, { headSha: HEAD }));
    const p = poll();

    const first = await p.round();
    expect(told).toEqual([
      {
        owner: 'acme',
        repo: 'web',
        number: 7,
        kind: 'checksFailed',
        key: `check_run:${lint.id}:${HEAD}`,
        headSha: HEAD,
        checks: [{ id: lint.id, name: 'lint', excerpt: 'lint\nsrc/a.ts:3 missing semicolon\nsecond line' }],
      },
    ]);
    expect(first).toMatchObject({ polled: 1, requests: 3, notModified: 0, events: 1, failures: [] });

    const writes = records.writes;
    const second = await p.round();
    expect(second).toMatchObject({ polled: 1, requests: 3, notModified: 3, events: 0 });
    expect(gh.requests.slice(-3).map((r) => r.status)).toEqual([304, 304, 304]);
    expect(records.writes).toBe(writes);
    expect(told).toHaveLength(1);
  });

  it('tells nothing the webhook already acted on (the same event key)', async () => {
    const lint = checkRun(HEAD, 'lint', 'failure');
    gh.pulls.set(pullKey('acme', 'web', 7), fakePull(7, HEAD, { checkRuns: [lint] }));
    records.add(pullRecord(7, { headSha: HEAD, seen: ['delivery-1', `check_run:${lint.id}:${HEAD}`] }));
    await poll().round();
    expect(told).toEqual([]);
  });

  it('tells a new head, a green suite, changes requested and review comments, as the webhook does', async () => {
    const newHead = 'b'.repeat(40);
    const suite = (run: ReturnType<typeof checkRun>, id: number) => ({ ...run, check_suite: { id } });
    gh.pulls.set(
      pullKey('acme', 'web', 7),
      fakePull(7, newHead, {
        checkRuns: [
          suite(checkRun(newHead, 'test', 'success'), 41),
          suite(checkRun(newHead, 'docs', 'skipped'), 41),
          suite(checkRun(newHead, 'deploy', null), 42),
        ],
        reviews: [
          {
            id: 1,
            user: { login: 'rita' },
            body: 'Please rename\nthe helper',
            state: 'CHANGES_REQUESTED',
            commit_id: HEAD,
            comments: 0,
          },
          { id: 2, user: { login: 'sam' }, body: '', state: 'COMMENTED', commit_id: newHead, comments: 2 },
          { id: 3, user: { login: 'ann' }, body: 'LGTM', state: 'APPROVED', commit_id: newHead, comments: 0 },
          { id: 4, user: { login: 'bob' }, body: '', state: 'COMMENTED', commit_id: newHead, comments: 0 },
        ],
      }),
    );
    records.add(pullRecord(7, { headSha: HEAD }));
    await poll().round();
    const ref = { owner: 'acme', repo: 'web', number: 7 };
    expect(told).toEqual([
      { ...ref, kind: 'headMoved', key: `head:${newHead}`, headSha: newHead },
      { ...ref, kind: 'checksPassed', key: `check_suite:41:${newHead}`, headSha: newHead },
      {
        ...ref,
        kind: 'changesRequested',
        key: 'review:1',
        headSha: HEAD,
        reviewId: 1,
        reviewer: 'rita',
        gist: 'Please rename\nthe helper',
        comments: 0,
      },
      {
        ...ref,
        kind: 'reviewComments',
        key: 'review:2',
        headSha: newHead,
        reviewId: 2,
        reviewer: 'sam',
        gist: '',
        comments: 2,
      },
    ]);
  });

  it('tells merged and closed, and reads no checks of an ended pull request', async () => {
    const closed_at = '2026-11-27T02:00:00Z';
    gh.pulls.set(
      pullKey('acme', 'web', 7),
      fakePull(7, HEAD, { state: 'closed', merged: true, merged_by: { login: 'rita' }, closed_at }),
    );
    gh.pulls.set(pullKey('acme', 'web', 8), fakePull(8, HEAD, { state: 'closed', closed_at }));
    records.add(pullRecord(7, { headSha: HEAD }));
    records.add(pullRecord(8, { headSha: HEAD }));
    const round = await poll().round();
    expect(told.map((e) => [e.kind, e.key, 'by' in e ? e.by : undefined])).toEqual([
      ['merged', `closed:${closed_at}`, 'rita'],
      ['closed', `closed:${closed_at}`, undefined],
    ]);
    expect(round.requests).toBe(2);
  });

  it('reads at most TETHER_GITHUB_POLL_MAX pull requests a round, taking turns', async () => {
    for (const n of [1, 2, 3]) {
      gh.pulls.set(pullKey('acme', 'web', n), fakePull(n, HEAD));
      records.add(pullRecord(n, { headSha: HEAD }));
    }
    const p = poll(2);
    const polled = async () => {
      const before = gh.requests.length;
      await p.round();
      return gh.requests
        .slice(before)
        .filter((r) => /pulls\/\d+$/.test(r.path))
        .map((r) => r.path.split('/').pop());
    };
    expect(await polled()).toEqual(['1', '2']);
    expect(await polled()).toEqual(['3', '1']);
    expect(await polled()).toEqual(['2', '3']);
  });

  it('tells a refused pull request in the round and polls the others', async () => {
    gh.pulls.set(pullKey('acme', 'web', 2), fakePull(2, HEAD, { checkRuns: [checkRun(HEAD, 'lint', 'timed_out')] }));
    records.add(pullRecord(1));
    records.add(pullRecord(2, { headSha: HEAD }));
    const round = await poll().round();
    expect(round.failures).toEqual([
      { pull: 'acme/web#1', error: 'GitHub GET /repos/acme/web/pulls/1 was refused (404): Not Found' },
    ]);
    expect(told.map((e) => e.kind)).toEqual(['checksFailed']);
  });

  it('ends the round on a spent rate limit and asks nothing until GitHub resets it', async () => {
    for (const n of [1, 2]) {
      gh.pulls.set(pullKey('acme', 'web', n), fakePull(n, HEAD));
      records.add(pullRecord(n, { headSha: HEAD }));
    }
    const reset = 1_795_000_000;
    let now = (reset - 600) * 1000;
    const p = poll(50, handler, () => now);
    gh.rateLimitedUntil = reset;
    expect(await p.round()).toMatchObject({
      polled: 1,
      rateLimited: 'GitHub GET /repos/acme/web/pulls/1 was refused (403): the rate limit is spent until 11:06 UTC',
    });
    const asked = gh.requests.length;
    gh.rateLimitedUntil = undefined;
    expect(await p.round()).toMatchObject({ polled: 0 });
    expect(gh.requests.length).toBe(asked);
    now = reset * 1000;
    expect(await p.round()).toMatchObject({ polled: 2, failures: [] });
  });

  it(`reads a pull request afresh when its stored poll state was edited into something no header can \
carry`, async () => {
    gh.pulls.set(pullKey('acme', 'web', 7), fakePull(7, HEAD, { checkRuns: [checkRun(HEAD, 'lint', 'failure')] }));
    records.add(pullRecord(7, { headSha: HEAD, poll: { pull: '"x"\r\nX-Evil: 1', head: HEAD, reviews: '' } }));
    expect(await poll().round()).toMatchObject({ failures: [], events: 1 });
    expect((await records.get('acme', 'web', 7))!.poll).toEqual({
      pull: expect.stringMatching(/^"[0-9a-f]+"$/),
      head: HEAD,
      checks: expect.any(String),
      checksHead: HEAD,
      reviews: expect.any(String),
    });
  });

  it('asks again next round when acting on an event failed', async () => {
    gh.pulls.set(pullKey('acme', 'web', 7), fakePull(7, HEAD, { checkRuns: [checkRun(HEAD, 'lint', 'failure')] }));
    records.add(pullRecord(7, { headSha: HEAD }));
    let fail = true;
    const flaky = async (event: PullEvent) => {
      if (fail) throw new Error('the API server is away');
      await handler(event);
    };
    const p = poll(50, flaky);
    await expect(p.round()).rejects.toThrow('the API server is away');
    fail = false;
    await p.round();
    expect(told.map((e) => e.kind)).toEqual(['checksFailed']);
  });

  it('runs rounds on its own once started, until stopped', async () => {
    gh.pulls.set(pullKey('acme', 'web', 7), fakePull(7, HEAD, { checkRuns: [checkRun(HEAD, 'lint', 'failure')] }));
    records.add(pullRecord(7, { headSha: HEAD }));
    let firstEvent!: () => void;
    const oneTold = new Promise<void>((resolve) => (firstEvent = resolve));
    const client = new GitHubClient({ apiUrl: gh.url, tokenFile: join(dir, 'token'), timeoutMs: 5000 }, makeRedactor());
    const onEvent = async (e: PullEvent) => (await handler(e), firstEvent());
    const p = new GitHubPoll({ client, records, onEvent, settings: { intervalMs: 10, maxPerRound: 50 } });
    const poller = p.start(createLogger({ component: 'test', level: 'silent' }));
    await oneTold;
    await poller.stop();
    const requests = gh.requests.length;
    expect(told.map((e) => e.key)).toEqual([expect.stringMatching(/^check_run:/)]);
    expect((await records.get('acme', 'web', 7))!.seen).toEqual([eventKeyDigest(told[0]!.key)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gh.requests.length).toBe(requests);
  });
});
