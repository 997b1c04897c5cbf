// The runner's git store kept across Pods (a claim of the workspace's): with real git, a later Pod's runner fetches
// only what is new, clears what a killed one left, trusts the store's record of the base over the workspace's, and
// gives the agent a shallow .git once the history is large.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_HISTORY } from '../../runner-image/git/agent-git.ts';
import { Git } from '../../runner-image/git/store.ts';
import { plainGit } from '../support/plain-git.ts';

const COMMITS = 60;

/** A remote with COMMITS commits on main (three objects each, more than git unpacks loose), and a workspace. */
function setup() {
  const root = mkdtempSync(join(tmpdir(), 'tether-git-store-'));
  const remote = join(root, 'remote.git');
  const seed = join(root, 'seed');
  mkdirSync(seed);
  plainGit(root, 'init', '--quiet', '--bare', '--initial-branch=main', remote);
  plainGit(seed, 'init', '--quiet', '--initial-branch=main');
  const upstream = (path: string, content: string) => {
    writeFileSync(join(seed, path), content);
    plainGit(seed, 'add', '.');
    plainGit(seed, 'commit', '--quiet', '-m', `write ${path}`);
    plainGit(seed, 'push', '--quiet', remote, 'main');
  };
  for (let i = 0; i < COMMITS; i++) {
    writeFileSync(join(seed, `f${i}.txt`), `${i}\n`);
    plainGit(seed, 'add', '.');
    plainGit(seed, 'commit', '--quiet', '-m', `commit ${i}`);
  }
  plainGit(seed, 'push', '--quiet', remote, 'main');
  const workspace = join(root, 'workspace');
  mkdirSync(workspace);
  /** The runner of a Pod mounting the store at `storeDir`. */
  const podGit = (storeDir: string) =>
    new Git({
      workspace,
      checkout: 'repo',
      storeDir,
      author: { name: 'Tether', email: 'tether@example.com' },
      redact: (s) => s,
      path: process.env.PATH!,
    });
  const tip = () => plainGit(remote, 'rev-parse', 'main').trim();
  const objects = (storeDir: string) =>
    Object.fromEntries(
      plainGit(join(storeDir, 'store.git'), 'count-objects', '-v')
        .trim()
        .split('\n')
        .map((line) => line.split(': ') as [string, string])
        .map(([k, v]) => [k, Number(v)]),
    );
  return { root, remote, repo: join(workspace, 'repo'), workspace, upstream, podGit, tip, objects };
}

const historyDefaults = { ...AGENT_HISTORY };
afterEach(() => Object.assign(AGENT_HISTORY, historyDefaults));

describe('the git store kept across Pods', { timeout: 30_000 }, () => {
  it("fetches only the new commit's objects into the store a former Pod filled", async () => {
    const { root, remote, podGit, upstream, objects, tip, repo } = setup();
    const store = join(root, 'store');
    await podGit(store).prepare(remote, 'main');
    const first = objects(store);
    expect(first).toMatchObject({ packs: 1, 'in-pack': COMMITS * 3 });
    upstream('new.txt', 'new\n');
    expect(await podGit(store).prepare(remote, 'main')).toBe('updated');
    const next = objects(store);
    // The new commit, its tree and its blob, unpacked loose (fewer than unpackLimit): no history again.
    expect(next).toMatchObject({ packs: 1, 'in-pack': COMMITS * 3, count: first.count! + 3 });
    expect(plainGit(repo, 'rev-parse', 'HEAD').trim()).toBe(tip());
  });

  it('clears the ref locks and scratch a runner killed mid-fetch left on the claim', async () => {
    const { root, remote, podGit, upstream, tip, repo } = setup();
    await podGit(join(root, 'killed')).prepare(remote, 'main');
    // The next Pod mounts the same claim (here: a copy at another path, as a new process sees it).
    const store = join(root, 'store');
    cpSync(join(root, 'killed'), store, { recursive: true });
    writeFileSync(join(store, 'store.git', 'refs', 'heads', 'main.lock'), '');
    writeFileSync(join(store, 'store.git', 'packed-refs.lock'), '');
    mkdirSync(join(store, 'tmp', 'clone-half'));
    upstream('new.txt', 'new\n');
    expect(await podGit(store).prepare(remote, 'main')).toBe('updated');
    expect(plainGit(repo, 'rev-parse', 'HEAD').trim()).toBe(tip());
    expect(existsSync(join(store, 'store.git', 'refs', 'heads', 'main.lock'))).toBe(false);
    expect(readdirSync(join(store, 'tmp'))).toEqual([]);
  });

  it('keeps changes on the base the store recorded, whatever base the agent wrote on the workspace', async () => {
    const { root, remote, podGit, upstream, tip, repo, workspace } = setup();
    const store = join(root, 'store');
    await podGit(store).prepare(remote, 'main');
    const base = tip();
    writeFileSync(join(repo, 'kept.txt'), 'kept\n');
    upstream('later.txt', 'later\n');
    // A commit the branch contains, so the workspace's record alone would be believed.
    writeFileSync(join(workspace, '.tether-repo-base'), `${tip()}\n`);
    const git = podGit(store);
    expect(await git.prepare(remote, 'main')).toBe('kept-changes');
    expect(plainGit(repo, 'rev-parse', 'HEAD').trim()).toBe(base);
    const diff = await git.diff((await git.changes())!);
    expect(diff).toMatchObject({ files: 1 });
    expect(diff.stat).toContain('kept.txt');
  });
});

describe("the agent's .git", { timeout: 30_000 }, () => {
  const log = (repo: string) => plainGit(repo, 'log', '--format=%s').trim().split('\n');

  it('holds the whole history while the store is small', async () => {
    const { root, remote, podGit, repo } = setup();
    await podGit(join(root, 'store')).prepare(remote, 'main');
    expect(plainGit(repo, 'rev-parse', '--is-shallow-repository').trim()).toBe('false');
    expect(log(repo)).toHaveLength(COMMITS);
  });

  it('holds the last commits only once the history is large: git log ends at a grafted commit', async () => {
    const { root, remote, podGit, repo, tip } = setup();
    Object.assign(AGENT_HISTORY, { fullUpToKiB: 0, depth: 10 });
    await podGit(join(root, 'store')).prepare(remote, 'main');
    expect(plainGit(repo, 'rev-parse', '--is-shallow-repository').trim()).toBe('true');
    expect(log(repo)).toEqual(Array.from({ length: 10 }, (_, i) => `commit ${COMMITS - 1 - i}`));
    expect(plainGit(repo, 'log', '-1', '--format=%D', 'HEAD~9')).toMatch(/grafted/);
    expect(plainGit(repo, 'rev-parse', 'HEAD', 'origin/main').trim().split('\n')).toEqual([tip(), tip()]);
    expect(plainGit(repo, 'status', '--porcelain')).toBe('');
    expect(plainGit(repo, 'remote', 'get-url', 'origin').trim()).toBe(remote);
  });

  it('has the base of kept changes too when shallow, however far behind the tip', async () => {
    const { root, remote, podGit, repo, upstream, tip } = setup();
    Object.assign(AGENT_HISTORY, { fullUpToKiB: 0, depth: 2 });
    const store = join(root, 'store');
    await podGit(store).prepare(remote, 'main');
    const base = tip();
    writeFileSync(join(repo, 'kept.txt'), 'kept\n');
    for (const n of [1, 2, 3]) upstream(`later${n}.txt`, `${n}\n`);
    expect(await podGit(store).prepare(remote, 'main')).toBe('kept-changes');
    expect(plainGit(repo, 'rev-parse', 'HEAD', 'origin/main').trim().split('\n')).toEqual([base, tip()]);
    expect(plainGit(repo, 'status', '--porcelain')).toBe('?? kept.txt\n');
  });
});
