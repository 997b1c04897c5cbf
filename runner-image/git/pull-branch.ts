// A pull request's branch in the private store: fetched while the forge has it, the whole pull
// request's size, and the push of one more commit — fast-forward only, to tether/* only (refused
// before git runs). When someone else pushed meanwhile, the reviewed tree goes onto the new tip by a
// three-way merge of trees (`git merge-tree --write-tree`, no work tree; the base is the reviewed tip).
import { TETHER_BRANCH_PATTERN } from '../../common/session/forge-schema.ts';
import { DIFF_OPTIONS } from './env.ts';
import type { RunningGit, RunOptions } from './spawn.ts';

export interface BranchGit {
  run(args: string[], options?: RunOptions): Promise<string>;
  /** The process itself: merge-tree's answer is read from stdout when it exits 1 (conflicts). */
  start(args: string[]): RunningGit;
}

/** A push to a ref outside tether/*: refused before git runs. */
export class RefusedRef extends Error {}

/** The reviewed changes and what someone else pushed meanwhile touch the same lines. */
export class PushConflict extends Error {
  readonly paths: string[];
  constructor(branch: string, paths: string[]) {
    const shown = paths.slice(0, 5).join(', ') + (paths.length > 5 ? ` and ${paths.length - 5} more` : '');
    super(`Someone else pushed to ${branch} meanwhile and changed the same parts of ${shown || 'the files'}`);
    this.paths = paths;
  }
}

export interface Pushed {
  commit: string;
  /** The reviewed tree was put on a tip someone else pushed meanwhile. */
  onNewTip: boolean;
}

/** Tries of push → fetch → merge when the branch keeps moving under the push. */
export const PUSH_ATTEMPTS = 3;

const TETHER_BRANCH = new RegExp(TETHER_BRANCH_PATTERN);
const OBJECT_LINE = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

export function assertTetherBranch(branch: string): void {
  if (!TETHER_BRANCH.test(branch) || branch.includes('..') || branch.endsWith('.lock'))
    throw new RefusedRef(`Tether pushes only to tether/* branches; "${branch}" is refused`);
}

export async function commitOf(git: BranchGit, rev: string): Promise<string> {
  return (await git.run(['rev-parse', '--verify', '--end-of-options', `${rev}^{commit}`])).trim();
}

/** Fetches refs/heads/<branch> of the forge into the same ref of the store; its tip. */
export async function fetchRef(git: BranchGit, url: string, branch: string): Promise<string> {
  const ref = `refs/heads/${branch}`;
  const fetch = ['fetch', '--quiet', '--no-tags', '--no-recurse-submodules', '--update-head-ok', '--end-of-options'];
  await git.run([...fetch, url, `+${ref}:${ref}`], { forge: url });
  return commitOf(git, ref);
}

/** fetchRef, or undefined when the forge no longer has the branch. */
export async function fetchBranch(git: BranchGit, url: string, branch: string): Promise<string | undefined> {
  const ref = `refs/heads/${branch}`;
  const listed = await git.run(['ls-remote', '--end-of-options', url, ref], { forge: url });
  if (!listed.split('\n').some((line) => line.split('\t')[1] === ref)) return undefined;
  return fetchRef(git, url, branch);
}

/** "3 files changed, 10 insertions(+), 2 deletions(-)": the commit against where it left the base. */
export async function pullRequestSize(git: BranchGit, base: string, commit: string): Promise<string> {
  const fork = (await git.run(['merge-base', '--end-of-options', base, commit]).catch(() => base)).trim();
  const stat = await git.run(['diff', ...DIFF_OPTIONS, '--shortstat', '--end-of-options', fork, commit]);
  return stat.trim() || 'no changes';
}

const commitTree = async (git: BranchGit, tree: string, parents: string[], message: string) =>
  (
    await git.run(
      ['commit-tree', '--no-gpg-sign', ...parents.flatMap((p) => ['-p', p]), '-F', '-', '--end-of-options', tree],
      { input: message },
    )
  ).trim();

/**
 * The changes from `base` to `changed` applied to `onto`, as a tree: the three trees become commits with one
 * common parent (the base's tree), so merge-tree's merge base is exactly that tree.
 */
export async function mergeTrees(git: BranchGit, trees: { base: string; onto: string; changed: string }) {
  const root = await commitTree(git, trees.base, [], 'base\n');
  const onto = await commitTree(git, trees.onto, [root], 'onto\n');
  const changed = await commitTree(git, trees.changed, [root], 'changed\n');
  const { stdout, done } = git.start(['merge-tree', '--write-tree', '--name-only', '--no-messages', onto, changed]);
  let out = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const failed = await done.then(
    () => undefined,
    (error: unknown) => error,
  );
  const [tree = '', ...paths] = out.split('\n').filter(Boolean);
  if (!OBJECT_LINE.test(tree)) throw failed ?? new Error(`git merge-tree did not name a tree: ${out.slice(0, 200)}`);
  return failed ? { conflicts: [...new Set(paths)] } : { tree };
}

export interface PushInput {
  url: string;
  branch: string;
  commit: string;
  /** The tip the commit was made on (the reviewed base). */
  parent: string;
  message: string;
  treeOf: (commit: string) => Promise<string>;
}

/** One push of a commit to tether/<…>; refused before git runs for any other branch. */
export async function pushOnce(git: BranchGit, url: string, commit: string, branch: string): Promise<void> {
  assertTetherBranch(branch);
  const options = ['push', '--quiet', '--no-verify', '--no-recurse-submodules', '--end-of-options'];
  // No "+": git and the forge refuse anything but a fast-forward.
  await git.run([...options, url, `${commit}:refs/heads/${branch}`], { forge: url });
}

/** Pushes the commit to tether/<…> fast-forward; on a tip that moved, merges onto it and pushes that. */
export async function pushToBranch(git: BranchGit, input: PushInput): Promise<Pushed> {
  assertTetherBranch(input.branch);
  let { commit, parent } = input;
  for (let attempt = 1; ; attempt++) {
    try {
      await pushOnce(git, input.url, commit, input.branch);
      return { commit, onNewTip: commit !== input.commit };
    } catch (error) {
      const tip = await fetchBranch(git, input.url, input.branch);
      if (tip === commit) return { commit, onNewTip: commit !== input.commit };
      if (!tip || tip === parent || attempt >= PUSH_ATTEMPTS) throw error;
      const merged = await mergeTrees(git, {
        base: await input.treeOf(parent),
        onto: await input.treeOf(tip),
        changed: await input.treeOf(commit),
      });
      if (merged.conflicts) throw new PushConflict(input.branch, merged.conflicts);
      commit = await commitTree(git, merged.tree, [tip], input.message);
      parent = tip;
    }
  }
}
