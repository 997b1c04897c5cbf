// *merge* merges what the phone's Sessions pushed. A collaborator who may push to the repository
// pushes a commit of their own onto tether/<session> after Tether's last push; its checks pass. The
// phone, told nothing of that commit's contents, sends *merge*: the relay must not merge a head it
// did not push (the phone never reviewed it), and must say why.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeRedactor } from '../../common/log.ts';
import type { Session } from '../../common/session/schema.ts';
import { GitHubClient } from '../../relay/github/client.ts';
import { GitHubMerger } from '../../relay/github/merge.ts';
import { applyEvent } from '../../relay/github/notices.ts';
import { recordOf, refreshed } from '../../relay/pulls/recorder.ts';
import { RecordsInMemory, checkRun, fakePull, pullKey, startFakeGitHub, type FakeGitHub } from './github-fake.ts';

const PUSHED = 'a'.repeat(40);
const THEIRS = 'd'.repeat(40);
const URL = 'https://github.com/acme/web/pull/5';
let dir: string;
let gh: FakeGitHub;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-merge-head-'));
  writeFileSync(join(dir, 'token'), 'relay-token');
  gh = await startFakeGitHub(() => 'relay-token');
});
afterEach(async () => {
  await gh.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The phone's Session that opened #5 with the commit PUSHED. */
const session = {
  metadata: { name: 's-5', namespace: 'ns', creationTimestamp: '2026-11-27T00:00:00Z' },
  spec: { phone: '+15555550123', prompt: 'p', repo: { url: 'https://github.com/acme/web.git', branch: 'main' } },
  status: {
    phase: 'Succeeded',
    completionTime: '2026-11-27T00:01:00Z',
    result: { prUrl: URL, prNumber: 5, branch: 'tether/s-5', commit: PUSHED, pushed: 'opened' },
  },
} as unknown as Session;

async function mergeAfterTheirPush() {
  const records = new RecordsInMemory();
  const made = recordOf(session, [])!;
  await records.update('acme', 'web', 5, (current) => refreshed(current, made));
  // GitHub's synchronize for the collaborator's push, as the webhook or the poll tells it.
  const event = { owner: 'acme', repo: 'web', number: 5, key: `head:${THEIRS}`, kind: 'headMoved', headSha: THEIRS };
  await records.update('acme', 'web', 5, (r) => r && applyEvent(r, event as never, 'now', (s) => s).record);
  gh.pulls.set(pullKey('acme', 'web', 5), fakePull(5, THEIRS, { checkRuns: [checkRun(THEIRS, 'test', 'success')] }));
  const client = new GitHubClient({ apiUrl: gh.url, tokenFile: join(dir, 'token'), timeoutMs: 5000 }, makeRedactor());
  const reply = await new GitHubMerger(client, records).merge((await records.get('acme', 'web', 5))!, {
    name: 'Ada',
    merge: true,
  });
  return { reply, records };
}

describe('*merge* of a head someone else pushed', () => {
  it('is refused, saying the head is not what Tether pushed; nothing is merged', async () => {
    const { reply, records } = await mergeAfterTheirPush();
    expect(gh.requests.filter((r) => r.method === 'PUT')).toEqual([]);
    expect(gh.pulls.get(pullKey('acme', 'web', 5))!.merged).toBe(false);
    expect(reply).toMatch(/dddddd.*not .*Tether pushed|someone else pushed/i);
    expect((await records.get('acme', 'web', 5))!.state).toBe('open');
  });
});
