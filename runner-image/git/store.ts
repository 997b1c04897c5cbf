// Git for the runner, around a private object store in a folder the agent cannot write (TETHER_GIT_STORE): the
// base branch (and a pull request's, pull-branch.ts) is fetched there with the token; the agent's checkout is written
// from it; the checkout is snapshotted into it, and exactly that snapshot is reviewed and pushed. No git the runner
// runs has a work tree or the agent's .git: every read and write of the workspace goes through workspace-fs
// (workspace/snapshot.ts reads the checkout, workspace/checkout.ts writes it; agent-git.ts copies in the agent's
// .git), and no git reads configuration the agent can write (env.ts, spawn.ts).
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Redactor } from '../../common/log.ts';
import { applyChanges, type Change } from '../workspace/checkout.ts';
import { DIFF_OPTIONS, type GitIdentity, type TokenSource } from './env.ts';
import type { Diff } from './text.ts';
import { spawnGit, type RunningGit, type RunOptions } from './spawn.ts';
import { BaseTree, readBlobs, treeChanges } from './objects.ts';
import {
  buildSnapshot,
  SNAPSHOT_LIMITS,
  SnapshotRefused,
  type Snapshot,
  type SnapshotLimits,
} from '../workspace/snapshot.ts';
import { withWorkspaceDir } from '../workspace/fs.ts';
import { replaceAgentGit, type AgentGitPlace } from './agent-git.ts';
import { fetchBranch, fetchRef, pullRequestSize, pushOnce, pushToBranch, type BranchGit } from './pull-branch.ts';
import { clearLeftovers, keptBase, recordBase } from './store-upkeep.ts';

export type { Snapshot } from '../workspace/snapshot.ts';
export { PushConflict, RefusedRef, type Pushed } from './pull-branch.ts';
export { commitMessage, cutDiff, type Diff } from './text.ts';

export interface GitDeps {
  /** The workspace mount: the trusted root of every path below it. */
  workspace: string;
  /** The agent's checkout (the work tree), relative to the workspace. */
  checkout: string;
  /** The runner's private folder: the object store, git's HOME, scratch files. */
  storeDir: string;
  token?: TokenSource;
  author: GitIdentity;
  redact: Redactor;
  /** PATH to find git. */
  path: string;
  /** The Pod's outbound proxy for git's http(s) (curl's variable names). */
  proxy?: Readonly<Record<string, string>>;
  limits?: SnapshotLimits;
}

export type Prepared = 'cloned' | 'updated' | 'kept-changes';

export class Git {
  private readonly deps: GitDeps;
  private readonly store: string;
  private readonly scratch: string;
  /** The commit the checkout was made from: the review's base and the commit's parent. */
  private base: string | undefined;
  /** The base branch's tip: where a clean checkout rests between commands. */
  private rest: string | undefined;
  /** The pull request's tip the checkout started from; undefined without one, or when the forge lost its branch. */
  pullTip: string | undefined;
  private readonly agentGit: AgentGitPlace;
  private readonly branchGit: BranchGit;

  constructor(deps: GitDeps) {
    this.deps = deps;
    this.store = join(deps.storeDir, 'store.git');
    this.scratch = join(deps.storeDir, 'tmp');
    const { workspace, checkout } = deps;
    const run = (args: string[], options: RunOptions) => this.run(args, options);
    this.agentGit = { run, store: this.store, scratch: this.scratch, workspace, checkout };
    this.branchGit = { run, start: (args) => this.start(args) };
  }

  /** git in the private folder; `done` settles when it exits (rejecting with its redacted stderr). */
  private start(args: string[], options: RunOptions = {}): RunningGit {
    return spawnGit(args, {
      ...options,
      gitDir: options.gitDir === null ? null : (options.gitDir ?? this.store),
      path: this.deps.path,
      storeDir: this.deps.storeDir,
      author: this.deps.author,
      token: this.deps.token,
      redact: this.deps.redact,
      proxy: this.deps.proxy,
    });
  }

  async runRaw(args: string[], options: RunOptions = {}): Promise<Buffer> {
    const { stdin, stdout, done } = this.start(args, options);
    const chunks: Buffer[] = [];
    stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    stdin.end(options.input);
    await done;
    return Buffer.concat(chunks);
  }

  async run(args: string[], options: RunOptions = {}): Promise<string> {
    return (await this.runRaw(args, options)).toString();
  }

  /**
   * Fetches the base branch (and the pull request's branch, when given) into the store and writes the agent's
   * checkout from the branch's tip — the base's when the forge no longer has the branch — unless changes are kept.
   */
  async prepare(url: string, branch: string, pullBranch?: string): Promise<Prepared> {
    await this.ensureStore();
    for (const name of [branch, pullBranch ?? branch])
      await this.run(['check-ref-format', `refs/heads/${name}`]).catch(() => {
        throw new Error(`"${name}" is not a valid branch name`);
      });
    this.rest = await fetchRef(this.branchGit, url, branch);
    this.pullTip = pullBranch ? await fetchBranch(this.branchGit, url, pullBranch) : undefined;
    const latest = this.pullTip ?? this.rest;
    const fresh = await this.ensureWorkTree();
    const from = (await keptBase((args) => this.run(args), this.deps.workspace, [latest, this.rest])) ?? latest;
    this.base = from;
    let outcome: Prepared = 'kept-changes';
    if (fresh || (await this.isClean(from))) {
      await this.checkOut(fresh ? undefined : await this.treeOf(from), latest);
      this.base = latest;
      outcome = fresh ? 'cloned' : 'updated';
    }
    await this.recordBase(this.base);
    await replaceAgentGit(this.agentGit, url, this.pullTip ? pullBranch! : branch, this.base, latest);
    return outcome;
  }

  /** The work tree as a tree in the store, when it differs from the base; undefined before prepare(). */
  async changes(): Promise<Snapshot | undefined> {
    if (!this.base) return undefined;
    const snapshot = await this.snapshot(this.base);
    return snapshot.tree === (await this.treeOf(this.base)) ? undefined : snapshot;
  }

  /** Stat and unified diff from the base to a snapshot, computed from the store's objects only. */
  async diff(snapshot: Snapshot): Promise<Diff> {
    const range = ['--end-of-options', this.requireBase(), snapshot.tree];
    const stat = await this.run(['diff', ...DIFF_OPTIONS, '--stat=72', ...range]);
    const full = this.deps.redact(await this.run(['diff', ...DIFF_OPTIONS, ...range]));
    const files = (await this.run(['diff', ...DIFF_OPTIONS, '--name-only', ...range]))
      .split('\n')
      .filter(Boolean).length;
    return {
      stat: this.deps.redact(stat.trimEnd()),
      full,
      files,
      lines: full.split('\n').length - (full.endsWith('\n') ? 1 : 0),
    };
  }

  /** A commit of exactly this snapshot on the base. */
  async commit(snapshot: Snapshot, message: string): Promise<string> {
    const args = [
      'commit-tree',
      '--no-gpg-sign',
      '-p',
      this.requireBase(),
      '-F',
      '-',
      '--end-of-options',
      snapshot.tree,
    ];
    return (await this.run(args, { input: message })).trim();
  }

  /** Pushes a commit of the store to refs/heads/<branch> (tether/* only) of the repository URL, fast-forward. */
  async push(url: string, commit: string, branch: string): Promise<void> {
    await pushOnce(this.branchGit, url, commit, branch);
  }

  /** push(), and when the branch moved meanwhile the commit's changes merged onto its new tip and pushed. */
  async pushOnto(url: string, branch: string, commit: string, message: string) {
    const treeOf = (rev: string) => this.treeOf(rev);
    return pushToBranch(this.branchGit, { url, branch, commit, parent: this.requireBase(), message, treeOf });
  }

  /** The whole pull request's size: the commit against where it left the base branch. */
  async pullRequestSize(commit: string): Promise<string> {
    return pullRequestSize(this.branchGit, this.rest ?? this.requireBase(), commit);
  }

  /**
   * The work tree back to where it rests (the base, or for a pull request's branch the base branch's tip): what
   * differs is restored or removed; ignored and left-out files stay.
   */
  async revert(): Promise<void> {
    const base = this.requireBase();
    const rest = this.rest ?? base;
    await this.checkOut((await this.snapshot(base)).tree, rest);
    if (rest !== base) await this.recordBase(rest);
  }

  /** A checkout left clean on a pull request's tip goes back to the base branch's tip (next command: either). */
  async settle(): Promise<void> {
    if (this.rest && this.base && this.rest !== this.base && (await this.isClean(this.base))) await this.revert();
  }

  /** The parent every commit of a reviewed snapshot gets: the base the review was computed against. */
  get reviewBase(): string {
    return this.requireBase();
  }

  private requireBase(): string {
    if (!this.base) throw new Error('the workspace is not prepared');
    return this.base;
  }

  private async ensureStore(): Promise<void> {
    await mkdir(join(this.deps.storeDir, 'home'), { recursive: true, mode: 0o700 });
    await mkdir(this.scratch, { recursive: true, mode: 0o700 });
    if (!existsSync(join(this.store, 'HEAD')))
      await this.run(['init', '--quiet', '--bare', '--template=', '--end-of-options', this.store], { gitDir: null });
    await clearLeftovers(this.store, this.scratch);
  }

  private async recordBase(commit: string): Promise<void> {
    await recordBase((args) => this.run(args), this.deps.workspace, commit);
  }

  /**
   * The checkout must be a real folder (a symlink would make the runner snapshot whatever it points at); true when it
   * holds nothing but .git.
   */
  private async ensureWorkTree(): Promise<boolean> {
    return withWorkspaceDir(this.deps.workspace, '', async (root) => {
      const type = await root.typeOf(this.deps.checkout);
      if (type !== undefined && type !== 'dir')
        throw new Error(`${join(this.deps.workspace, this.deps.checkout)} is not a folder`);
      // 0777 as mkdir(1): the umask decides, and the agent's group must be able to write its checkout.
      const checkout = await root.makeDir(this.deps.checkout, 0o777);
      const entries = await checkout.entries().finally(() => checkout.close());
      return entries.every((entry) => entry.name === '.git');
    });
  }

  private async treeOf(commit: string): Promise<string> {
    return (await this.run(['rev-parse', '--verify', '--end-of-options', `${commit}^{tree}`])).trim();
  }

  /** Whether the checkout is the commit's tree; a checkout too large to snapshot is not. */
  private async isClean(commit: string): Promise<boolean> {
    const snapshot = await this.snapshot(commit).catch((error: unknown) => {
      if (error instanceof SnapshotRefused) return undefined;
      throw error;
    });
    return snapshot?.tree === (await this.treeOf(commit));
  }

  /** The checkout read through workspace-fs (snapshot.ts), compared with the commit's tree, written to the store. */
  private async snapshot(commit: string): Promise<Snapshot> {
    const tree = await this.treeOf(commit);
    const base = new BaseTree(
      tree,
      await this.runRaw(['ls-tree', '-r', '-z', '--full-tree', '--end-of-options', tree]),
    );
    const { name, email } = this.deps.author;
    return withWorkspaceDir(this.deps.workspace, this.deps.checkout, (checkout) =>
      buildSnapshot(checkout, base, {
        limits: this.deps.limits ?? SNAPSHOT_LIMITS,
        uid: process.getuid!(),
        committer: `${name} <${email}>`,
        fastImport: () => {
          const { stdin, stdout, done } = this.start([
            'fast-import',
            '--quiet',
            '--force',
            '--done',
            '--cat-blob-fd=1',
          ]);
          const chunks: Buffer[] = [];
          stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
          return { input: stdin, output: done.then(() => Buffer.concat(chunks).toString()) };
        },
      }),
    );
  }

  /** Writes the checkout from the tree it holds (none when fresh) to the commit `to`, through checkout.ts. */
  private async checkOut(from: string | undefined, to: string): Promise<void> {
    const target = await this.treeOf(to);
    const changes: Change[] =
      from === undefined
        ? new BaseTree(
            target,
            await this.runRaw(['ls-tree', '-r', '-z', '--full-tree', '--end-of-options', target]),
          ).all()
        : treeChanges(await this.runRaw(['diff-tree', '-r', '-z', '--no-renames', '--end-of-options', from, target]));
    await withWorkspaceDir(this.deps.workspace, this.deps.checkout, (checkout) =>
      applyChanges(checkout, changes, (ids) => readBlobs(() => this.start(['cat-file', '--batch']), ids)),
    );
  }
}
