// What the user approved is exactly what is pushed, and the runner's git runs nothing the agent
// configured: the runner as a real process against the real API server, a bare remote (or one
// served over HTTP that wants the token), the test editing the workspace as a leftover process would.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { filesContaining } from '../support/files.ts';
import { basicAuth, serveGitOverHttp } from '../../local/git-forge.ts';
import { hostileGitScript } from '../support/hostile-git.ts';
import {
  answer,
  createStartedSession,
  makeRemote,
  specFor,
  startRunner,
  useRunnerTestbed,
  waitFor,
} from '../support/runner.ts';

const bed = useRunnerTestbed('snapshot');
const CANARY = 'ghp_CanaryTokenForTetherTests0123456789ab';

/** A Session on a given repository URL, and its runner. */
async function start(prompt: string, repoUrl: string, env: Record<string, string> = {}) {
  const name = await createStartedSession(bed.sessions, bed.ns, specFor(prompt, repoUrl));
  const runner = startRunner({
    kubeconfig: inject('kubeconfig'),
    namespace: bed.ns,
    name,
    env: { GITHUB_API_URL: bed.github.url, ...env },
  });
  return { name, runner, repo: join(runner.workspace, 'repo') };
}

const bashStep = (command: string) => `tool: Bash ${JSON.stringify({ command })}`;
const treeOf = (remote: ReturnType<typeof makeRemote>, rev: string) => remote.git('rev-parse', `${rev}^{tree}`).trim();

describe.concurrent('publishing the reviewed snapshot', { timeout: 150_000 }, () => {
  it('edits made after the review are not pushed: the branch holds exactly the reviewed tree', async () => {
    const { name, runner, remote, repo } = await bed.run(
      'script: change the app\nwrite: src/app.txt = reviewed\\n\nsay: Changed the app',
    );
    const review = await waitFor(
      bed.sessions,
      bed.ns,
      name,
      (s) => s.status?.phase === 'AwaitingApproval' && s.status.pending?.kind === 'changes',
    );
    // A process that outlived the agent edits the workspace between the review and the approval.
    writeFileSync(join(repo, 'src', 'app.txt'), 'tampered\n');
    writeFileSync(join(repo, 'sneaky.txt'), 'never reviewed\n');
    rmSync(join(repo, 'README.md'));
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(await runner.exited, runner.output()).toBe(0);
    const done = (await bed.sessions.get(bed.ns, name))!;
    expect(done.status?.phase).toBe('Succeeded');

    const reviewed = review.status!.result!.snapshotTree!;
    expect(reviewed).toMatch(/^[0-9a-f]{40}$/);
    expect(done.status?.result?.snapshotTree).toBe(reviewed);
    expect(review.status?.result).toMatchObject({
      diffLines: { total: expect.any(Number), inImage: expect.any(Number) },
    });
    expect(review.status?.result?.diff).toContain('+reviewed');
    expect(treeOf(remote, `tether/${name}`)).toBe(reviewed);
    expect(remote.git('rev-parse', `tether/${name}^`).trim()).toBe(remote.git('rev-parse', 'main').trim());
    expect(remote.git('ls-tree', '-r', '--name-only', `tether/${name}`).split('\n').filter(Boolean).sort()).toEqual([
      'README.md',
      'src/app.txt',
    ]);
    expect(remote.git('show', `tether/${name}:src/app.txt`)).toBe('reviewed\n');
    expect(remote.git('show', `tether/${name}:README.md`)).toBe('# web\n');
    // What was approved lives on the branch; the workspace is back on the base.
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# web\n');
    expect(existsSync(join(repo, 'sneaky.txt'))).toBe(false);
    expect(existsSync(join(repo, 'src', 'app.txt'))).toBe(false);
  });

  it('git configuration planted in the workspace runs nothing and redirects nothing', async () => {
    const remote = makeRemote();
    const evil = join(remote.root, 'evil.git');
    execFileSync('git', ['init', '--quiet', '--bare', evil]);
    const marker = join(remote.root, 'MARKER');
    const prompt =
      `script:\n${bashStep(hostileGitScript({ marker, realUrl: remote.url, evilUrl: evil }))}\nwrite: ` +
      `app.txt = after the trap\\n`;
    const { name, runner, repo } = await start(prompt, remote.url);
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
    const review = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await bed.sessions.get(bed.ns, name))?.status?.phase).toBe('Succeeded');
    expect(readFileSync(join(repo, '.git', 'config'), 'utf8'), 'the trap is planted').toContain(`pushurl = ${evil}`);
    expect(existsSync(marker), existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe(false);
    expect(execFileSync('git', ['-C', evil, 'for-each-ref'], { encoding: 'utf8' })).toBe('');
    expect(treeOf(remote, `tether/${name}`)).toBe(review.status?.result?.snapshotTree);
    expect(remote.git('show', `tether/${name}:app.txt`)).toBe('after the trap\n');
  });

  it('a committed symlink to .git does not make .git writable without asking', async () => {
    const remote = makeRemote();
    const clone = mkdtempSync(join(tmpdir(), 'tether-seed-'));
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', clone, '-c', 'user.name=o', '-c', 'user.email=o@o', ...args], { encoding: 'utf8' });
    execFileSync('git', ['clone', '--quiet', remote.url, clone]);
    symlinkSync('.git', join(clone, 'g'));
    git('add', 'g');
    git('commit', '--quiet', '-m', 'a link to .git');
    git('push', '--quiet', 'origin', 'main');

    const { name, runner, repo } = await start(
      'script:\nwrite: g/config = [core]\\n\\tfsmonitor = touch PWNED\\n\nwrite: ok.txt = fine\\n',
      remote.url,
    );
    const asked = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'deny', message: 'not the git folder' });
    expect(asked.status?.pending).toMatchObject({ kind: 'tool', tool: 'Write' });
    expect(JSON.parse(asked.status!.pending!.input!).file_path).toBe(join(repo, 'g', 'config'));
    const review = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(review.status?.result?.diffStat).toContain('ok.txt');
    expect(await runner.exited, runner.output()).toBe(0);
    expect(readFileSync(join(repo, '.git', 'config'), 'utf8')).not.toContain('fsmonitor');
    expect(remote.git('ls-tree', `tether/${name}`, 'g')).toMatch(/^120000 blob /);
    expect(remote.git('show', `tether/${name}:ok.txt`)).toBe('fine\n');
  });

  it('the token reaches the forge only: not the workspace, the branch, the Session or the output', async () => {
    const remote = makeRemote();
    const forge = await serveGitOverHttp(join(remote.root, 'remotes'), CANARY, { record: true });
    const elsewhere = await serveGitOverHttp(join(remote.root, 'remotes'), 'another-token', { record: true });
    try {
      const url = `${forge.origin}/acme/web.git`;
      const trap = hostileGitScript({
        marker: join(remote.root, 'MARKER'),
        realUrl: url,
        evilUrl: `${elsewhere.origin}/acme/web.git`,
      });
      const { name, runner, repo } = await start(`script:\n${bashStep(trap)}\nwrite: feature.txt = feature\\n`, url, {
        GITHUB_TOKEN: CANARY,
        TETHER_REPO_HOSTS: new URL(forge.origin).host,
      });
      await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
      await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
      expect(await runner.exited, runner.output()).toBe(0);
      const session = (await bed.sessions.get(bed.ns, name))!;
      expect(session.status?.phase).toBe('Succeeded');

      expect(forge.requests.map((r) => `${r.method} ${r.path}`)).toContain('POST /acme/web.git/git-receive-pack');
      expect(forge.requests.every((r) => r.authorization === basicAuth(CANARY))).toBe(true);
      expect(readFileSync(join(repo, '.git', 'config'), 'utf8'), 'the trap is planted').toContain(`insteadOf = ${url}`);
      expect(elsewhere.requests).toEqual([]);
      expect(remote.git('show', `tether/${name}:feature.txt`)).toBe('feature\n');
      expect(bed.github.pulls.find((p) => p.head === `tether/${name}`)?.headers.authorization).toBe(`Bearer ${CANARY}`);

      const needles = [CANARY, basicAuth(CANARY).slice('Basic '.length)];
      expect(filesContaining(runner.workspace, needles)).toEqual([]);
      expect(filesContaining(runner.gitStore, needles)).toEqual([]);
      const pushed =
        remote
          .git('ls-tree', '-r', '--name-only', `tether/${name}`)
          .split('\n')
          .filter(Boolean)
          .map((path) => remote.git('show', `tether/${name}:${path}`))
          .join('\n') + remote.git('log', '--format=%B%an%ae%cn%ce', `tether/${name}`);
      for (const needle of needles) {
        expect(pushed).not.toContain(needle);
        expect(JSON.stringify(session)).not.toContain(needle);
        expect(runner.output()).not.toContain(needle);
      }
    } finally {
      await forge.close();
      await elsewhere.close();
    }
  });
});
