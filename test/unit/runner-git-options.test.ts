// A Session's branch or URL that git would read as an option (`--upload-pack=<command>` runs the
// command) never runs anything: the schema's pattern is bypassed here (the values go straight to the
// runner's code), and the runner's own check and git's `--end-of-options` each hold on their own.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoProblem } from '../../common/session/repo.ts';
import { Git } from '../../runner-image/git/store.ts';
import { plainGit } from '../support/plain-git.ts';

const author = { name: 'Tether', email: 'tether@example.com' };
const git = plainGit;

/**
 * A bare remote with one commit on main; the runner's git for a fresh workspace; where a command would leave its mark.
 */
function setup() {
  const root = mkdtempSync(join(tmpdir(), 'tether-git-options-'));
  const remote = join(root, 'remote.git');
  mkdirSync(remote);
  git(remote, 'init', '--quiet', '--bare', '--initial-branch=main');
  git(
    remote,
    'update-ref',
    'refs/heads/main',
    git(remote, 'commit-tree', '-m', 'initial', git(remote, 'mktree').trim()).trim(),
  );
  mkdirSync(join(root, 'workspace'));
  const runnerGit = new Git({
    workspace: join(root, 'workspace'),
    checkout: 'repo',
    storeDir: mkdtempSync(join(root, 'store-')),
    token: () => 'ghp_x',
    author,
    redact: (s) => s,
    path: process.env.PATH!,
  });
  return { root, remote, runnerGit, marker: join(root, 'MARKER') };
}

/** Runs `touch <marker>` if git takes it as its upload-pack (shell-expanded, so no space is needed). */
const uploadPack = (marker: string) => `--upload-pack=touch\${IFS}${marker}`;

describe('a ref or URL that looks like an option', { timeout: 30_000 }, () => {
  it('is a real attack: where git reads it as an option, the command runs', () => {
    const { root, remote, marker } = setup();
    const checkout = join(root, 'old-checkout');
    mkdirSync(checkout);
    git(checkout, 'init', '--quiet');
    git(checkout, 'remote', 'add', 'origin', remote);
    // The runner's fetch as it was before the private store: `git fetch --prune origin <base>`.
    try {
      git(checkout, 'fetch', '--prune', 'origin', uploadPack(marker));
    } catch {
      /* the fetch fails after running the command */
    }
    expect(existsSync(marker)).toBe(true);
  });

  it("as the base branch: git itself accepts the name, yet the runner's git never runs the command", async () => {
    const { remote, runnerGit, marker } = setup();
    const branch = uploadPack(marker);
    expect(() => execFileSync('git', ['check-ref-format', `refs/heads/${branch}`])).not.toThrow();
    await expect(runnerGit.prepare(remote, branch)).rejects.toThrow(/git fetch failed/);
    expect(existsSync(marker)).toBe(false);
    // What the runner does before git runs at all (and what the API server enforces).
    expect(repoProblem({ url: remote, baseBranch: branch }, [remote])).toMatch(/is not a branch name/);
  });

  it('as the repository URL: git is told it is a URL, and the runner refuses it first', async () => {
    const { runnerGit, marker } = setup();
    const url = uploadPack(marker);
    await expect(runnerGit.prepare(url, 'main')).rejects.toThrow(/git fetch failed/);
    expect(existsSync(marker)).toBe(false);
    await expect(runnerGit.prepare('--upload-pack=touch /tmp/never', 'main')).rejects.toThrow(/git fetch failed/);
    expect(existsSync('/tmp/never')).toBe(false);
    expect(repoProblem({ url }, ['github.com'])).toMatch(/is not a repository URL/);
  });

  it("a spaced --upload-pack ref fails the runner's own check before any git runs", async () => {
    const { remote, runnerGit, marker } = setup();
    await expect(runnerGit.prepare(remote, `--upload-pack=touch ${marker}`)).rejects.toThrow(
      /is not a valid branch name/,
    );
    expect(existsSync(marker)).toBe(false);
  });
});
