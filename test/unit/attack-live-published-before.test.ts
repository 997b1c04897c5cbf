// Attack on a replacement runner's publish (docs/runner.md, "A run that survives its Pod": Publishing): it takes the
// commit on the Session's branch when that commit's tree is the reviewed one. Whoever can push to the repository
// (the attacker holds it) puts there, while the lost Pod is being replaced, a commit with the reviewed tree on a
// history of its own — here an orphan commit that adds a file the phone never saw, then one that removes it. The
// replacement opens the pull request from it: the branch no longer holds "exactly the reviewed snapshot on top of
// the base the review was computed against" (docs/security.md, "What an approval guarantees"). Real git.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { Session } from '../../common/session/schema.ts';
import { publishedBefore, type PublishDeps } from '../../runner-image/forge/publish.ts';
import { Git } from '../../runner-image/git/store.ts';
import { plainGit } from '../support/plain-git.ts';

function commitFiles(seed: string, files: Record<string, string>, message: string): string {
  for (const [path, content] of Object.entries(files)) writeFileSync(join(seed, path), content);
  plainGit(seed, 'add', '-A');
  plainGit(seed, 'commit', '--quiet', '-m', message);
  return plainGit(seed, 'rev-parse', 'HEAD').trim();
}

it("a replacement publishes the reviewed tree only on the review's base, not on a history someone pushed", async () => {
  const root = mkdtempSync(join(tmpdir(), 'tether-published-before-'));
  const remote = join(root, 'remote.git');
  const seed = join(root, 'seed');
  mkdirSync(seed);
  mkdirSync(join(root, 'workspace'));
  plainGit(root, 'init', '--quiet', '--bare', '--initial-branch=main', remote);
  plainGit(seed, 'init', '--quiet', '--initial-branch=main');
  const base = commitFiles(seed, { 'a.txt': 'base\n' }, 'base');
  plainGit(seed, 'push', '--quiet', remote, 'main');
  // What the phone reviewed: the base and one new file.
  const reviewedTree = plainGit(seed, 'rev-parse', `${commitFiles(seed, { 'b.txt': 'reviewed\n' }, 'review')}^{tree}`);
  plainGit(seed, 'reset', '--quiet', '--hard', base);

  // Pushed to the Session's branch by someone else: the same tree, on an orphan history the phone never saw.
  plainGit(seed, 'checkout', '--quiet', '--orphan', 'planted');
  commitFiles(seed, { 'a.txt': 'base\n', 'b.txt': 'reviewed\n', 'unseen.txt': 'never reviewed\n' }, 'unseen');
  rmSync(join(seed, 'unseen.txt'));
  const planted = commitFiles(seed, {}, 'the reviewed tree again');
  plainGit(seed, 'push', '--quiet', remote, 'planted:refs/heads/tether/s');

  const git = new Git({
    workspace: join(root, 'workspace'),
    checkout: 'repo',
    storeDir: join(root, 'store'),
    author: { name: 'Tether', email: 'tether@example.com' },
    redact: (s) => s,
    path: process.env.PATH!,
  });
  await git.prepare(remote, 'main');
  const session = { metadata: { name: 's' }, spec: { repo: { url: remote, branch: 'main' } } } as unknown as Session;
  const taken = await publishedBefore({ git } as unknown as PublishDeps, session, reviewedTree.trim());

  // Either the planted commit is not taken (the reviewed tree is committed again on the base), or it is the review's.
  if (taken !== undefined) {
    const parents = plainGit(remote, 'rev-list', '--parents', '-n', '1', taken).trim().split(' ').slice(1);
    expect({ plantedTaken: taken === planted, parents }).toEqual({ plantedTaken: false, parents: [base] });
  }
});
