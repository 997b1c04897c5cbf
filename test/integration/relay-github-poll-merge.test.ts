// The relay's GitHub poll and *merge* for real: a relay (real API server, records in the install's
// ConfigMap) with no webhook, polling the GitHub stand-in over a real forge. A failing check reaches
// the phone once, later rounds are 304s; *merge* on red says why; on green it merges in the bare
// repository and the record is merged (a later "merged" from GitHub tells nothing twice).
import type { KubeConfig } from '@kubernetes/client-node';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { startGitHubWorkbench, type GitHubWorkbench } from '../../local/github/workbench.ts';
import { ConfigMapPullRecords } from '../../relay/pulls/records.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { PUBLIC_URL, startTestRelay, type TestRelay } from '../support/relay.ts';
import { messageSid, postWebhook, signedWebhook } from '../support/twilio-webhook.ts';

const PHONE = '+14155550182';
let kc: KubeConfig;
let ns: string;
let fake: FakeTwilio;
let bench: GitHubWorkbench;
let relay: TestRelay;
let dir: string;
let number: number;
let head: string;

beforeAll(async () => {
  ({ kc, ns } = await sessionNamespace('github-poll'));
  fake = await startFakeTwilio();
  bench = await startGitHubWorkbench();
  dir = mkdtempSync(join(tmpdir(), 'relay-gh-'));
  writeFileSync(join(dir, 'token'), bench.token);
  head = await bench.push('tether/one', { 'notes.txt': 'one\n' });
  ({ number } = await bench.github.createPull('acme', 'sample', { title: 'Notes', head: 'tether/one', base: 'main' }));
  const records = new ConfigMapPullRecords(connectionFromKubeConfig(kc), {
    name: 'tether-pull-requests',
    namespace: ns,
  });
  await records.update('acme', 'sample', number, () => ({
    owner: 'acme',
    repo: 'sample',
    number,
    url: `https://github.example/acme/sample/pull/${number}`,
    branch: 'tether/one',
    repoName: 'web',
    repoUrl: 'https://github.com/acme/web.git',
    phone: PHONE,
    state: 'open',
    headSha: head,
    chosenAt: new Date().toISOString(),
    notices: [],
    seen: [],
  }));
  relay = await startTestRelay({
    kubeConfig: kc,
    namespace: ns,
    twilio: fake,
    allowed: [PHONE],
    env: {
      TETHER_GITHUB_TOKEN_FILE: join(dir, 'token'),
      TETHER_GITHUB_API_URL: bench.github.url,
      TETHER_GITHUB_POLL_SECONDS: '1',
      TETHER_GITHUB_MERGE: 'whenGreen',
    },
  });
});
afterAll(async () => {
  await relay?.close();
  await bench?.close();
  await fake?.close();
  await deleteNamespace(kc, ns);
  rmSync(dir, { recursive: true, force: true });
});

const send = (body: string) =>
  postWebhook(
    `${relay.url}/webhook`,
    signedWebhook(fake.authToken, `${PUBLIC_URL}/webhook`, { from: PHONE, body, sid: messageSid() }),
  );
const bodies = () => fake.to(PHONE).map((m) => m.body);
const said = (pattern: RegExp, timeoutMs = 20_000) =>
  eventually(() => {
    const found = bodies().find((b) => pattern.test(b));
    expect(found).toBeDefined();
    return found!;
  }, timeoutMs);
/** Waits for `rounds` more poll rounds in which the pull request was read and had not changed. */
async function unchangedRounds(rounds: number) {
  const pullPath = `/repos/acme/sample/pulls/${number}`;
  const count = () => bench.github.requests.filter((r) => r.path === pullPath && r.status === 304).length;
  const start = count();
  await eventually(() => expect(count()).toBeGreaterThanOrEqual(start + rounds), 20_000);
}

describe('the GitHub poll and merge through a relay', () => {
  it('tells a failing check once, answers merge with the reason, then merges when green', async () => {
    const run = await bench.github.createCheckRun('acme', 'sample', {
      headSha: head,
      name: 'test',
      conclusion: 'failure',
      output: { title: '1 test failed', summary: 'greet.test.js: expected Hello' },
    });
    const notice = await said(/test/);
    expect(notice).toContain('greet.test.js: expected Hello');
    await unchangedRounds(2);
    expect(bodies().filter((b) => b.includes('greet.test.js'))).toHaveLength(1);

    await send('merge');
    expect(await said(/cannot merge/)).toBe(`Pull request #${number} cannot merge: a check failed (test).`);
    expect(bench.github.requests.filter((r) => r.method === 'PUT')).toEqual([]);

    await bench.github.updateCheckRun('acme', 'sample', run.id, { conclusion: 'success' });
    await send('merge');
    expect(await said(/Merged pull request/)).toMatch(
      new RegExp(`^🎉 Merged pull request #${number} \\([0-9a-f]{7}\\)`),
    );
    expect(await bench.sha('main:notes.txt')).toBe(await bench.sha(`${head}:notes.txt`));
    const stored = await new ConfigMapPullRecords(connectionFromKubeConfig(kc), {
      name: 'tether-pull-requests',
      namespace: ns,
    }).get('acme', 'sample', number);
    expect(stored?.state).toBe('merged');
  });
});
