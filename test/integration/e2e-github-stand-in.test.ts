// End to end with the GitHub stand-in as the local stack runs it: the runner's push reaches the
// stand-in through the forge, the pull request's head is the remote's branch, the stand-in's CI
// judges that head, and every event is delivered, signed, to the relay's /github/webhook.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileVerdict } from '../../local/github/ci.ts';
import { startE2E, type E2E } from '../support/e2e.ts';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ githubWebhooks: true, github: { ci: fileVerdict(), webhooks: { retries: 0 } } });
}, 90_000);
afterAll(async () => e2e?.stop());

describe('end to end: the GitHub stand-in', () => {
  it(`opens the pull request on the remote's branch, checks its head, and delivers each event to the \
relay`, async () => {
    const phone = e2e.phone('+14155550123');
    await phone.send('script:\nwrite: .ci-fail = greet.test.js failed\nsay: Added a failing marker.');
    await phone.next(/Reply \*approve\*/);
    await phone.send('approve');
    await phone.next(/Pull request opened/);
    const pull = e2e.github.pulls[0]!;
    const branchTip = execFileSync(
      'git',
      ['-c', `safe.directory=${e2e.remote}`, '--git-dir', e2e.remote, 'rev-parse', `refs/heads/${pull.head}`],
      { encoding: 'utf8' },
    ).trim();
    expect(await e2e.github.headSha('acme', 'sample', pull.number)).toBe(branchTip);

    await e2e.github.deliveriesSettled();
    const deliveries = e2e.github.deliveries;
    expect(deliveries.map((d) => `${d.event}:${d.action}`)).toEqual([
      'pull_request:opened',
      'check_run:created',
      'check_run:completed',
      'check_suite:completed',
    ]);
    expect(deliveries[2]!.payload.check_run).toMatchObject({
      head_sha: branchTip,
      conclusion: 'failure',
      output: { summary: expect.stringContaining('greet.test.js failed') },
      pull_requests: [expect.objectContaining({ number: pull.number })],
    });
    // Each went to the relay's webhook with the relay's secret, and the relay answered: no connection failed.
    expect(e2e.github.hooks).toEqual([
      expect.objectContaining({ url: `${e2e.stack.relayUrl}/github/webhook`, secret: e2e.githubWebhookSecret }),
    ]);
    for (const delivery of deliveries) expect(delivery.attempts.map((a) => a.status)).not.toContain(0);
  });
});
