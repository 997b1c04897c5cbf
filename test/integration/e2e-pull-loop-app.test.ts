// End to end, the pull-request loop on a GitHub App: the controller mints an installation token per
// runner Pod for the Session's one repository, and the runner opens the pull request and pushes the
// follow-up's commit with it (not with the install's fixed token); the App's private key is in no
// Session. Real Claude Code (scripted model), real git behind the forge, the GitHub stand-in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';
import { commitsOn } from '../support/pull-loop.ts';

const PHONE = '+14155550281';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: [PHONE], githubWebhooks: true, githubApp: true });
}, 120_000);
afterAll(async () => e2e?.stop());

describe('end to end: the pull request loop on a GitHub App', () => {
  it("opens and continues the pull request with installation tokens scoped to the Session's repository", async () => {
    const phone = e2e.phone(PHONE);
    await phone.send('script:\nwrite: src/app.js = export const app = 1;\\n\nsay: Wrote src/app.js.');
    await phone.next(/Reply \*approve\*/);
    await phone.send('approve');
    await phone.next(/Pull request opened: \S+\/pull\/1\b/, 120_000);
    await phone.send('script:\nwrite: src/app.js = export const app = 2;\\n\nsay: Changed src/app.js.');
    await phone.next(/Reply \*approve\* to push to pull request #1 /);
    await phone.send('approve');
    await phone.next(/Pushed to pull request #1\b/, 120_000);

    const sessions = await e2e.list();
    expect(commitsOn(e2e.remote, sessions[0]!.status!.result!.branch!)).toHaveLength(2);
    const [pull] = e2e.github.pulls;
    expect(pull!.user).not.toBe('tether-bot');
    const minted = e2e.github.tokens.filter((t) => t.repositories?.includes('sample'));
    expect(minted.length).toBeGreaterThanOrEqual(2);
    for (const token of minted) {
      expect(token.repositories).toEqual(['sample']);
      expect(token.permissions).toEqual({ contents: 'write', pull_requests: 'write', checks: 'read' });
    }
    const key = e2e.githubApp!.keys.privateKeyPem.split('\n')[1]!;
    expect(JSON.stringify(sessions)).not.toContain(key);
    expect(e2e.logs().filter((line) => line.includes(key))).toEqual([]);
  }, 300_000);
});
