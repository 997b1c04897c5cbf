// A pull request's branch with real git: the checkout from its tip, the review since that tip and the
// whole pull request's size, fast-forward pushes, a tip someone else moved (clean merge or conflict),
// a branch the forge lost, refs outside tether/* refused, and the checkout resting on the base after.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostileGitScript } from '../support/hostile-git.ts';
import { plainGit } from '../support/plain-git.ts';
import { Git, PushConflict, RefusedRef } from '../../runner-image/git/store.ts';

const author = { name: 'Tether', email: 'tether@example.com' };
const BRANCH = 'tether/s1';

/** A bare remote: main with README and app.txt; tether/s1 one commit ahead (pr.txt), pushed from a clone `other`. */
function setup() {
  const root = mkdtempSync(join(tmpdir(), 'tether-pr-unit-'));
  const remote = join(root, 'remote.git');
  mkdirSync(remote);
  plainGit(remote, 'init', '--quiet', '--bare', '--initial-branch=main');
  const other = join(root, 'other');
  mkdirSync(other);
  plainGit(other, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(join(other, 'README.md'), '# web\n');
  writeFileSync(join(other, 'app.txt'), 'one\ntwo\nthree\nfour\nfive\n');
  plainGit(other, 'add', '.');
  plainGit(other, 'commit', '--quiet', '-m', 'initial');
  plainGit(other, 'push', '--quiet', remote, 'main');
  plainGit(other, 'checkout', '--quiet', '-b', BRANCH);
  const commitOther = (path: string, content: string, ref = BRANCH) => {
    if (plainGit(remote, 'for-each-ref', `refs/heads/${ref}`)) {
      plainGit(other, 'fetch', '--quiet', remote, ref);
      plainGit(other, 'reset', '--quiet', '--hard', 'FETCH_HEAD');
    }
    writeFileSync(join(other, path), content);
    plainGit(other, 'add', '.');
    plainGit(other, 'commit', '--quiet', '-m', `change ${path}`);
    plainGit(other, 'push', '--quiet', remote, `HEAD:refs/heads/${ref}`);
    return plainGit(other, 'rev-parse', 'HEAD').trim();
  };
  const prTip = commitOther('pr.txt', 'from the pull request\n');
  const workspace = join(root, 'workspace');
  mkdirSync(workspace);
  const newGit = () =>
    new Git({
      workspace,
      checkout: 'repo',
      storeDir: mkdtempSync(join(root, 'store-')),
      author,
      redact: (s) => s,
      path: process.env.PATH!,
    });
  const tip = (ref = BRANCH) => plainGit(remote, 'rev-parse', ref).trim();
  return { root, remote, repo: join(workspace, 'repo'), workspace, newGit, commitOther, prTip, tip };
}

/** The checkout's changes committed as the runner does before the review. */
async function reviewed(git: Git, message = 'follow-up\n') {
  const snapshot = (await git.changes())!;
  return { snapshot, diff: await git.diff(snapshot), commit: await git.commit(snapshot, message), message };
}

describe("a pull request's branch", { timeout: 30_000 }, () => {
  it("starts from the branch's tip, reviews since it, sizes the whole pull request, pushes fast-forward", async () => {
    const { remote, repo, newGit, prTip, tip } = setup();
    const git = newGit();
    expect(await git.prepare(remote, 'main', BRANCH)).toBe('cloned');
    expect(git.pullTip).toBe(prTip);
    expect(readFileSync(join(repo, 'pr.txt'), 'utf8')).toBe('from the pull request\n');
    expect(plainGit(repo, 'rev-parse', '--abbrev-ref', 'HEAD').trim()).toBe(BRANCH);
    expect(plainGit(repo, 'status', '--porcelain')).toBe('');
    writeFileSync(join(repo, 'more.txt'), 'a\nb\n');
    const { diff, commit, message } = await reviewed(git);
    expect(diff.stat).toContain('more.txt');
    expect(diff.stat).not.toContain('pr.txt');
    expect(await git.pullRequestSize(commit)).toBe('2 files changed, 3 insertions(+)');
    expect(await git.pushOnto(remote, BRANCH, commit, message)).toEqual({ commit, onNewTip: false });
    expect(tip()).toBe(commit);
    expect(plainGit(remote, 'rev-parse', `${commit}^`).trim()).toBe(prTip);
  });

  it(`puts the reviewed changes on a tip someone else pushed meanwhile, and refuses to when they conflict, \
running nothing the checkout configures`, async () => {
    const { root, remote, repo, newGit, commitOther, tip } = setup();
    const git = newGit();
    await git.prepare(remote, 'main', BRANCH);
    const marker = join(root, 'MARKER');
    const evil = join(root, 'evil.git');
    plainGit(root, 'init', '--quiet', '--bare', evil);
    const mergeDriver = `'[merge "evil"]\\n\\tdriver = %s\\n' "$evil"`;
    const script = `${hostileGitScript({ marker, realUrl: remote, evilUrl: evil })}
printf ${mergeDriver} >> .git/config
printf ${mergeDriver} >> "$HOME/.gitconfig"
printf '* merge=evil\\n' >> .gitattributes`;
    execFileSync('sh', ['-c', script], { cwd: repo, env: { PATH: process.env.PATH, HOME: join(root, 'agent-home') } });
    writeFileSync(join(repo, 'app.txt'), 'ONE\ntwo\nthree\nfour\nfive\n');
    const { commit, message } = await reviewed(git);
    const theirs = commitOther('app.txt', 'one\ntwo\nthree\nfour\nFIVE\n');
    const pushed = await git.pushOnto(remote, BRANCH, commit, message);
    expect(pushed.onNewTip).toBe(true);
    expect(tip()).toBe(pushed.commit);
    expect(plainGit(remote, 'rev-parse', `${pushed.commit}^`).trim()).toBe(theirs);
    expect(plainGit(remote, 'show', `${pushed.commit}:app.txt`)).toBe('ONE\ntwo\nthree\nfour\nFIVE\n');
    expect(plainGit(remote, 'log', '-1', '--format=%B', pushed.commit)).toBe(message + '\n');

    const second = newGit();
    await second.prepare(remote, 'main', BRANCH);
    writeFileSync(join(repo, 'app.txt'), 'ONE\ntwo\nthree\nfour\nmine\n');
    const mine = await reviewed(second);
    const before = commitOther('app.txt', 'ONE\ntwo\nthree\nfour\ntheirs\n');
    const refused = await second.pushOnto(remote, BRANCH, mine.commit, mine.message).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PushConflict);
    expect((refused as PushConflict).paths).toEqual(['app.txt']);
    expect(tip()).toBe(before);
    expect(readFileSync(join(repo, 'app.txt'), 'utf8')).toBe('ONE\ntwo\nthree\nfour\nmine\n');
    expect(existsSync(marker)).toBe(false);
    expect(plainGit(evil, 'for-each-ref')).toBe('');
  });

  it('starts from the base when the forge no longer has the branch', async () => {
    const { remote, repo, newGit, tip } = setup();
    plainGit(remote, 'update-ref', '-d', `refs/heads/${BRANCH}`);
    const git = newGit();
    expect(await git.prepare(remote, 'main', BRANCH)).toBe('cloned');
    expect(git.pullTip).toBeUndefined();
    expect(existsSync(join(repo, 'pr.txt'))).toBe(false);
    expect(plainGit(repo, 'rev-parse', 'HEAD').trim()).toBe(tip('main'));
  });

  it('refuses a push to any ref outside tether/* before git runs', async () => {
    const { remote, repo, newGit, tip } = setup();
    const git = newGit();
    await git.prepare(remote, 'main');
    writeFileSync(join(repo, 'x.txt'), 'x\n');
    const { commit, message } = await reviewed(git);
    const main = tip('main');
    for (const branch of [
      'main',
      'tether',
      'tether/',
      'refs/heads/tether/x',
      'tether/a/b',
      'tether/../main',
      'x/tether/y',
    ])
      await expect(git.push(remote, commit, branch), branch).rejects.toBeInstanceOf(RefusedRef);
    await expect(git.pushOnto(remote, 'main', commit, message)).rejects.toBeInstanceOf(RefusedRef);
    expect(tip('main')).toBe(main);
    expect(plainGit(remote, 'for-each-ref', '--format=%(refname)').split('\n').filter(Boolean).sort()).toEqual([
      'refs/heads/main',
      `refs/heads/${BRANCH}`,
    ]);
  });

  it('rests on the base after a follow-up, so the next new command starts clean from the base', async () => {
    const { remote, repo, newGit, workspace, tip } = setup();
    const follow = newGit();
    await follow.prepare(remote, 'main', BRANCH);
    writeFileSync(join(repo, 'more.txt'), 'more\n');
    const { commit, message } = await reviewed(follow);
    await follow.pushOnto(remote, BRANCH, commit, message);
    await follow.revert();
    expect(existsSync(join(repo, 'pr.txt'))).toBe(false);
    expect(readFileSync(join(workspace, '.tether-repo-base'), 'utf8').trim()).toBe(tip('main'));
    expect(await newGit().prepare(remote, 'main')).toBe('updated');

    const idle = newGit();
    expect(await idle.prepare(remote, 'main', BRANCH)).toBe('updated');
    expect(readFileSync(join(repo, 'more.txt'), 'utf8')).toBe('more\n');
    await idle.settle();
    expect(existsSync(join(repo, 'more.txt'))).toBe(false);
    const fresh = newGit();
    expect(await fresh.prepare(remote, 'main')).toBe('updated');
    expect(await fresh.changes()).toBeUndefined();
  });
});
