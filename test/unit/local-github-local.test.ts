// The GitHub stand-in as the local stack runs it: webhooks to the relay's /github/webhook with the
// secret the relay is given, the App's key in a private file the controller is given, and the
// stand-in's own CI (red while a pull request has .ci-fail).
import { statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appJwt } from '../../local/github/app-keys.ts';
import { fileVerdict } from '../../local/github/ci.ts';
import { repositoriesOf, startLocalGitHub, type LocalGitHub } from '../../local/github/local-github.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../local/github/receiver.ts';
import { startGitHubWorkbench, type GitHubWorkbench } from '../../local/github/workbench.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0)) await close();
});

describe('the local stack’s GitHub stand-in', () => {
  it(`delivers to the relay's /github/webhook signed with the relay's secret; the App key is a private \
file`, async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'tether-gh-local-'));
    const local: LocalGitHub = await startLocalGitHub({ token: 'pat', stateDir, webhooks: true, app: true });
    const relay: WebhookReceiver = await startWebhookReceiver(local.stack.webhookSecret!);
    cleanup.push(
      () => local.github.close(),
      () => relay.close(),
      () => rm(stateDir, { recursive: true }),
    );
    local.deliverTo(relay.url.replace('/github/webhook', ''));
    await local.github.createPull('acme', 'sample', { title: 'T', head: 'tether/x', base: 'main' });
    await local.github.deliveriesSettled();
    expect(relay.received).toEqual([
      expect.objectContaining({ event: 'pull_request', action: 'opened', signed: true }),
    ]);
    const keyFile = local.stack.app!.privateKeyFile;
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const key = await readFile(keyFile, 'utf8');
    const installations = await fetch(`${local.github.url}/app/installations`, {
      headers: { authorization: `Bearer ${appJwt(local.app!.id, key)}` },
    });
    expect(await installations.json()).toEqual([
      expect.objectContaining({ id: 1, account: expect.objectContaining({ login: 'acme' }) }),
    ]);
    expect(relay.received[0]!.payload.installation).toEqual({ id: 1 });
  });

  it('sends nothing and gives the relay no secret without webhooks, and no App unless asked', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'tether-gh-local-'));
    const local = await startLocalGitHub({ token: 'pat', stateDir });
    cleanup.push(
      () => local.github.close(),
      () => rm(stateDir, { recursive: true }),
    );
    local.deliverTo('http://127.0.0.1:9');
    await local.github.createPull('acme', 'sample', { title: 'T', head: 'tether/x', base: 'main' });
    expect(local.stack).toEqual({});
    expect(local.github.deliveries).toEqual([]);
  });
});

describe('the repositories make dev gives the stand-in', () => {
  it('takes each served folder by its owner/name, and none of two folders with the same owner/name', () => {
    expect(repositoriesOf(['/a/acme/sample.git', '/b/acme/sample.git', '/b/acme/widgets.git'])).toEqual([
      { owner: 'acme', name: 'widgets', path: '/b/acme/widgets.git' },
    ]);
  });
});

describe("the stand-in's CI", () => {
  it(`checks every pull request opened or pushed to: red while the head has .ci-fail, green once it is \
gone`, async () => {
    const bench: GitHubWorkbench = await startGitHubWorkbench({ webhookSecret: 's', ci: fileVerdict() });
    cleanup.push(() => bench.close());
    const red = await bench.push('tether/ci', { '.ci-fail': 'greet.test.js: expected Hello\nline two\n' });
    await bench.github.createPull('acme', 'sample', { title: 'CI', head: 'tether/ci', base: 'main' });
    await bench.github.deliveriesSettled();
    const failed = bench.receiver!.received.find((r) => r.event === 'check_run' && r.action === 'completed')!;
    expect(failed.payload.check_run).toMatchObject({
      name: 'ci',
      head_sha: red,
      conclusion: 'failure',
      output: { summary: 'greet.test.js: expected Hello\nline two\n' },
    });
    const green = await bench.push('tether/ci', {}, { message: 'fix', remove: ['.ci-fail'] });
    await bench.github.deliveriesSettled();
    const suites = bench.receiver!.received.filter((r) => r.event === 'check_suite');
    expect(suites.map((s) => s.payload.check_suite)).toEqual([
      expect.objectContaining({ head_sha: red, conclusion: 'failure' }),
      expect.objectContaining({ head_sha: green, conclusion: 'success' }),
    ]);
  });
});
