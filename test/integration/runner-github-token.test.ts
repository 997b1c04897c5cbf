// The runner with a GitHub App token file (GITHUB_TOKEN_FILE, as the controller's Secret volume gives
// it) against the GitHub stand-in: the file is read at each use, so a token renewed under a running
// runner is the one its push and pull request use after the first has expired; a token for one
// repository cannot publish to another (the stand-in refuses it); no token reaches the Session or
// the runner's output.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { githubApp, RUNNER_PERMISSIONS } from '../../controller/github-app.ts';
import { makeAppKeys } from '../../local/github/app-keys.ts';
import { startGitHubWorkbench, type GitHubWorkbench } from '../../local/github/workbench.ts';
import {
  answer,
  createStartedSession,
  specFor,
  startRunner,
  useRunnerTestbed,
  waitFor,
  waitForPhase,
} from '../support/runner.ts';

const bed = useRunnerTestbed('runner-ghtoken');
const keys = makeAppKeys();
let bench: GitHubWorkbench;
let mint: (repository: string) => Promise<string>;

beforeAll(async () => {
  bench = await startGitHubWorkbench({
    more: ['other'],
    app: {
      id: 61,
      publicKey: keys.publicKeyPem,
      installations: [{ id: 62, account: 'acme', repositories: ['sample', 'other'] }],
    },
  });
  const keyFile = join(mkdtempSync(join(tmpdir(), 'runner-ghtoken-')), 'key.pem');
  writeFileSync(keyFile, keys.privateKeyPem);
  const app = githubApp(
    { appId: '61', installationId: '62', privateKeyFile: keyFile, apiUrl: bench.github.url },
    () => new Date(bench.github.clock.now()),
  );
  mint = async (repository) =>
    (await app.mint({ repositories: [repository], permissions: { ...RUNNER_PERMISSIONS } })).token;
});
afterAll(() => bench?.close());

/** A runner on `repoUrl` whose token file holds `token`. */
async function runWithTokenFile(prompt: string, repoUrl: string, token: string) {
  const tokenFile = join(mkdtempSync(join(tmpdir(), 'runner-token-file-')), 'token');
  writeFileSync(tokenFile, `${token}\n`);
  const name = await createStartedSession(bed.sessions, bed.ns, specFor(prompt, repoUrl));
  const runner = startRunner({
    kubeconfig: inject('kubeconfig'),
    namespace: bed.ns,
    name,
    env: bed.env({
      GITHUB_API_URL: bench.github.url,
      GITHUB_TOKEN_FILE: tokenFile,
      TETHER_REPO_HOSTS: new URL(bench.remoteUrl).host,
    }),
  });
  return { name, runner, tokenFile };
}

describe('the runner with a GitHub App token file', { timeout: 150_000 }, () => {
  it('reads the file at each use: after a renewal and the old token expiring, it pushes and opens the PR', async () => {
    const first = await mint('sample');
    const { name, runner, tokenFile } = await runWithTokenFile(
      'script: add a note\nwrite: note.txt = renewed\nsay: Added note.txt',
      bench.remoteUrl,
      first,
    );
    await waitForPhase(bed.sessions, bed.ns, name, 'AwaitingApproval');
    bench.github.clock.advance(61 * 60_000);
    const second = await mint('sample');
    writeFileSync(tokenFile, second);
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(await runner.exited, runner.output()).toBe(0);
    const done = (await bed.sessions.get(bed.ns, name))!;
    expect(done.status?.phase, done.status?.result?.message).toBe('Succeeded');
    expect(await bench.sha(`tether/${name}`)).toMatch(/^[0-9a-f]{40}$/);
    const pull = bench.github.pulls.find((p) => p.head === `tether/${name}`);
    expect(pull?.user).toBe('tether-stand-in[bot]');
    const seen = JSON.stringify(done) + runner.output();
    expect(seen).not.toContain(first);
    expect(seen).not.toContain(second);
  });

  it('cannot publish to another repository with its one repository token: the stand-in refuses the push', async () => {
    const token = await mint('sample');
    const other = bench.remoteUrl.replace('/sample.git', '/other.git');
    const { name, runner } = await runWithTokenFile(
      'script: add a note\nwrite: note.txt = elsewhere\nsay: Added note.txt',
      other,
      token,
    );
    // The stand-in refuses the token on the other repository: at the fetch, or at the push after approval.
    const stopped = await waitFor(bed.sessions, bed.ns, name, (s) =>
      ['Failed', 'AwaitingApproval'].includes(s.status?.phase ?? ''),
    );
    if (stopped.status?.phase === 'AwaitingApproval')
      await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    const failed = await waitForPhase(bed.sessions, bed.ns, name, 'Failed');
    await runner.exited;
    expect(failed.status?.result?.message).toMatch(/403/);
    expect(JSON.stringify(failed) + runner.output()).not.toContain(token);
    const otherBare = bench.bare.replace('/sample.git', '/other.git');
    expect(() =>
      execFileSync('git', ['--git-dir', otherBare, 'rev-parse', '--verify', `tether/${name}`], { stdio: 'pipe' }),
    ).toThrow();
  });
});
