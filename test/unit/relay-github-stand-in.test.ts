// The relay's GitHub webhook fed by the GitHub stand-in (local/github/: its own signing, payloads,
// retries and redeliveries, over a real forge and real git): a phone hears of its pull request's
// failing check, review and closing once each, and of nothing else.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startGitHubWorkbench, type GitHubWorkbench } from '../../local/github/workbench.ts';
import { startGithubRelay, type GithubRelay } from './github-relay.ts';
import { MemoryRecords, SECRET, pullRecord } from './github-fixtures.ts';

let bench: GitHubWorkbench;
let relay: GithubRelay;
let number: number;
let head: string;
beforeEach(async () => {
  bench = await startGitHubWorkbench();
  head = await bench.push('tether/cmd-1a2b', { 'nav.txt': 'navbar\n' });
  const pull = await bench.github.createPull('acme', 'sample', {
    title: 'Navbar',
    head: 'tether/cmd-1a2b',
    base: 'main',
  });
  number = pull.number;
  const record = pullRecord({ repo: 'sample', repoName: 'sample', number, url: pull.html_url, headSha: head });
  relay = await startGithubRelay({ records: new MemoryRecords([record]) });
  bench.github.addWebhook({ url: `${relay.base}/github/webhook`, secret: SECRET });
});
afterEach(async () => {
  await bench.close();
  await relay.close();
});

/** Every delivery so far answered, and acted on. */
async function settled(): Promise<Array<string | undefined>> {
  await bench.github.deliveriesSettled();
  await relay.deliveries.idle();
  return relay.sent.flatMap((s) => s.parts.map((p) => p.text));
}

describe('the GitHub webhook, fed by the stand-in', () => {
  it("a failing check on the phone's pull request is told once; a redelivery, another pull request: not", async () => {
    await bench.github.createCheckRun('acme', 'sample', {
      headSha: head,
      name: 'test',
      conclusion: 'failure',
      output: { title: '1 test failed', summary: 'nav.test.js: expected *blue*\nsee https://evil.example' },
    });
    const texts = await settled();
    expect(texts).toEqual([
      `❌ Check *test* failed on pull request #${number} (sample).\n` +
        '│ 1 test failed\n│ nav.test.js: expected blue\n│ see https[:]//evil.example\n' +
        'Reply *fix* to have the agent fix it, *details* for more, or *ignore*.',
    ]);
    const told = bench.github.deliveries.find((d) => d.event === 'check_run' && d.action === 'completed')!;
    expect(told.statusCode).toBe(202);
    bench.github.redeliver(told.guid);

    const other = await bench.push('feature/by-hand', { 'x.txt': 'x\n' });
    await bench.github.createPull('acme', 'sample', { title: 'By hand', head: 'feature/by-hand', base: 'main' });
    await bench.github.createCheckRun('acme', 'sample', { headSha: other, name: 'test', conclusion: 'failure' });
    expect(await settled()).toHaveLength(1);
    expect(bench.github.deliveries.filter((d) => d.guid === told.guid).map((d) => d.statusCode)).toEqual([202, 202]);
  });

  it('changes requested, a failure on a head the branch moved past, the closing: told, not told, told', async () => {
    await bench.github.submitReview('acme', 'sample', number, {
      user: 'octocat',
      state: 'changes_requested',
      body: 'Make it blue.',
    });
    await settled();
    await bench.push('tether/cmd-1a2b', { 'nav.txt': 'blue navbar\n' });
    await settled();
    await bench.github.createCheckRun('acme', 'sample', { headSha: head, name: 'late', conclusion: 'failure' });
    await bench.github.closePull('acme', 'sample', number, 'octocat');
    expect(await settled()).toEqual([
      `✋ octocat asked for changes on pull request #${number} (sample).\n│ Make it blue.\n` +
        'Reply *fix* to have the agent address the review, *details* for more, or *ignore*.',
      `Pull request #${number} (sample) was closed without merging by octocat. ` +
        'Your next command there starts from the base branch.',
    ]);
    expect((await relay.records.only()).state).toBe('closed');
  });

  it('a hook with another secret: every attempt refused with 401, nothing acted on', async () => {
    const wrong = await startGithubRelay({ secret: 'not-the-hook-secret' });
    try {
      bench.github.addWebhook({ url: `${wrong.base}/github/webhook`, secret: SECRET });
      await bench.github.createCheckRun('acme', 'sample', { headSha: head, name: 'test', conclusion: 'failure' });
      await bench.github.deliveriesSettled();
      const toWrong = bench.github.deliveries.filter((d) => d.hookId === bench.github.deliveries.at(-1)!.hookId);
      expect(toWrong.length).toBeGreaterThan(0);
      expect(new Set(toWrong.map((d) => d.statusCode))).toEqual(new Set([401]));
      await wrong.deliveries.idle();
      expect(wrong.sent).toEqual([]);
      expect(wrong.journal.depth).toBe(0);
    } finally {
      await wrong.close();
    }
  });
});
