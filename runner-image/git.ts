// Git for the runner, around a private object store in a folder the agent cannot write
// (TETHER_GIT_STORE): the base branch is fetched there with the token; the agent's checkout is
// made from it (origin = the repository URL, no credentials); the work tree is snapshotted into
// it, and exactly that snapshot is reviewed and pushed. No git the runner runs uses the agent's
// .git as its repository, and none reads configuration the agent can write (git-env.ts).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, cp, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Redactor } from '../common/log.ts';
import { DIFF_OPTIONS, gitEnvironment, type GitIdentity } from './git-env.ts';
import { forgeText } from './forge-text.ts';

export interface GitDeps {
  /** The agent's checkout: the work tree. */
  repoDir: string;
  /** The runner's private folder: the object store, git's HOME, scratch indexes. */
  storeDir: string;
  token?: string;
  author: GitIdentity;
  redact: Redactor;
  /** PATH to find git. */
  path: string;
}

/** A tree written from the work tree into the private store. */
export interface Snapshot { tree: string }

export interface Diff {
  stat: string;
  /** The whole unified diff, redacted. */
  full: string;
  files: number;
  lines: number;
}

export type Prepared = 'cloned' | 'updated' | 'kept-changes';

interface RunOptions {
  /** The work tree is the agent's checkout. */
  workTree?: boolean;
  index?: string;
  /** The repository; the private store unless given, none (clone, init) with null. */
  gitDir?: string | null;
  /** This command talks to the forge at this URL: the token goes with it. */
  forge?: string;
  input?: string;
}

const OBJECT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

export class Git {
  private readonly deps: GitDeps;
  private readonly store: string;
  private readonly scratch: string;
  /** The base commit with stat data of the work tree: snapshots start from a copy of it. */
  private readonly baseIndex: string;
  /** Outside the checkout, on the workspace: the commit the kept work tree is based on (checked before use). */
  private readonly baseFile: string;
  private base: string | undefined;

  constructor(deps: GitDeps) {
    this.deps = deps;
    this.store = join(deps.storeDir, 'store.git');
    this.scratch = join(deps.storeDir, 'tmp');
    this.baseIndex = join(deps.storeDir, 'base.index');
    this.baseFile = join(dirname(deps.repoDir), '.tether-repo-base');
  }

  run(args: string[], options: RunOptions = {}): Promise<string> {
    const env = gitEnvironment({
      path: this.deps.path, home: join(this.deps.storeDir, 'home'), author: this.deps.author,
      ...(options.forge ? { forge: { url: options.forge, token: this.deps.token } } : {}),
    });
    if (options.gitDir !== null) env.GIT_DIR = options.gitDir ?? this.store;
    if (options.workTree) env.GIT_WORK_TREE = this.deps.repoDir;
    if (options.index) env.GIT_INDEX_FILE = options.index;
    const cwd = options.workTree ? this.deps.repoDir : this.deps.storeDir;
    return new Promise((resolve, reject) => {
      const child = execFile('git', args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
        if (error) reject(new Error(this.deps.redact(`git ${args[0]} failed: ${stderr.trim() || error.message}`)));
        else resolve(stdout);
      });
      // git's exit status tells whether it read its input; a closed pipe adds nothing to that.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(options.input);
    });
  }

  /** Fetches the base branch into the store and makes the agent's checkout from it, unless earlier changes are kept. */
  async prepare(url: string, branch: string): Promise<Prepared> {
    await this.ensureStore();
    await this.run(['check-ref-format', `refs/heads/${branch}`]).catch(() => {
      throw new Error(`"${branch}" is not a valid branch name`);
    });
    await this.run(['fetch', '--quiet', '--no-tags', '--no-recurse-submodules', '--update-head-ok', '--end-of-options',
      url, `+refs/heads/${branch}:refs/heads/${branch}`], { forge: url });
    const latest = await this.commitOf(`refs/heads/${branch}`);
    await this.ensureWorkTree();
    const fresh = (await readdir(this.deps.repoDir)).every((name) => name === '.git');
    const from = (await this.keptBase(latest)) ?? latest;
    await this.indexBase(from);
    const clean = fresh || (await this.snapshotTree()) === (await this.treeOf(from));
    let outcome: Prepared = 'kept-changes';
    this.base = from;
    if (clean) {
      await this.run(['read-tree', '--reset', '-u', '--end-of-options', latest], { workTree: true, index: this.baseIndex });
      await this.run(['update-index', '-q', '--refresh'], { workTree: true, index: this.baseIndex });
      this.base = latest;
      outcome = fresh ? 'cloned' : 'updated';
    }
    await rm(this.baseFile, { force: true });
    await writeFile(this.baseFile, `${this.base}\n`, { flag: 'wx' });
    await this.replaceAgentGit(url, branch, latest);
    return outcome;
  }

  /** The work tree as a tree in the store, when it differs from the base; undefined before prepare(). */
  async changes(): Promise<Snapshot | undefined> {
    if (!this.base) return undefined;
    const tree = await this.snapshotTree();
    return tree === (await this.treeOf(this.base)) ? undefined : { tree };
  }

  /** Stat and unified diff from the base to a snapshot, computed from the store's objects only. */
  async diff(snapshot: Snapshot): Promise<Diff> {
    const range = ['--end-of-options', this.requireBase(), snapshot.tree];
    const stat = await this.run(['diff', ...DIFF_OPTIONS, '--stat=72', ...range]);
    const full = this.deps.redact(await this.run(['diff', ...DIFF_OPTIONS, ...range]));
    const files = (await this.run(['diff', ...DIFF_OPTIONS, '--name-only', ...range])).split('\n').filter(Boolean).length;
    return { stat: this.deps.redact(stat.trimEnd()), full, files, lines: full.split('\n').length - (full.endsWith('\n') ? 1 : 0) };
  }

  /** A commit of exactly this snapshot on the base. */
  async commit(snapshot: Snapshot, message: string): Promise<string> {
    const args = ['commit-tree', '--no-gpg-sign', '-p', this.requireBase(), '-F', '-', '--end-of-options', snapshot.tree];
    return (await this.run(args, { input: message })).trim();
  }

  /** Pushes a commit of the store to refs/heads/<branch> of the repository URL. */
  async push(url: string, commit: string, branch: string): Promise<void> {
    await this.run(['push', '--quiet', '--no-verify', '--no-recurse-submodules', '--end-of-options', url, `${commit}:refs/heads/${branch}`], { forge: url });
  }

  /** The work tree back to the base: changed files restored, new files removed, ignored files kept. */
  async revert(): Promise<void> {
    const base = this.requireBase();
    await this.withIndex(async (index) => {
      await copyFile(this.baseIndex, index);
      await this.run(['add', '-A'], { workTree: true, index });
      await this.run(['read-tree', '--reset', '-u', '--end-of-options', base], { workTree: true, index });
    });
  }

  private requireBase(): string {
    if (!this.base) throw new Error('the workspace is not prepared');
    return this.base;
  }

  private async ensureStore(): Promise<void> {
    await mkdir(join(this.deps.storeDir, 'home'), { recursive: true, mode: 0o700 });
    await mkdir(this.scratch, { recursive: true, mode: 0o700 });
    if (!existsSync(join(this.store, 'HEAD'))) await this.run(['init', '--quiet', '--bare', '--template=', '--end-of-options', this.store], { gitDir: null });
  }

  /** The checkout must be a real folder: a symlink would make the runner snapshot whatever it points at. */
  private async ensureWorkTree(): Promise<void> {
    const stat = await lstat(this.deps.repoDir).catch(() => undefined);
    if (!stat) await mkdir(this.deps.repoDir, { recursive: true });
    else if (!stat.isDirectory()) throw new Error(`${this.deps.repoDir} is not a folder`);
  }

  private async commitOf(rev: string): Promise<string> {
    return (await this.run(['rev-parse', '--verify', '--end-of-options', `${rev}^{commit}`])).trim();
  }

  private async treeOf(commit: string): Promise<string> {
    return (await this.run(['rev-parse', '--verify', '--end-of-options', `${commit}^{tree}`])).trim();
  }

  /** The base the kept work tree was made from: only a commit the forge's branch contains. */
  private async keptBase(latest: string): Promise<string | undefined> {
    const recorded = (await readFile(this.baseFile, 'utf8').catch(() => '')).trim();
    if (!OBJECT_ID.test(recorded)) return undefined;
    const contained = await this.run(['merge-base', '--is-ancestor', '--end-of-options', recorded, latest]).then(() => true, () => false);
    return contained ? recorded : undefined;
  }

  private async indexBase(commit: string): Promise<void> {
    await rm(this.baseIndex, { force: true });
    await this.run(['read-tree', '--end-of-options', commit], { index: this.baseIndex });
    await this.run(['update-index', '-q', '--refresh'], { workTree: true, index: this.baseIndex });
  }

  /** `add -A` on a copy of the base index: symlinks are stored as links, .git is never entered. */
  private snapshotTree(): Promise<string> {
    return this.withIndex(async (index) => {
      await copyFile(this.baseIndex, index);
      await this.run(['add', '-A'], { workTree: true, index });
      return (await this.run(['write-tree'], { index })).trim();
    });
  }

  private async withIndex<T>(use: (index: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(join(this.scratch, 'index-'));
    try {
      return await use(join(dir, 'index'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * A new .git for the agent, made in the private folder and copied in whole: the branch at the base,
   * origin/<branch> at the latest fetch, origin = the URL without credentials, the index of the base.
   */
  private async replaceAgentGit(url: string, branch: string, latest: string): Promise<void> {
    const made = await mkdtemp(join(this.scratch, 'clone-'));
    const staging = await mkdtemp(join(dirname(this.deps.repoDir), '.tether-git-'));
    try {
      await this.run(['clone', '--quiet', '--no-checkout', '--branch', branch, '--end-of-options', this.store, made], { gitDir: null });
      const gitDir = join(made, '.git');
      await this.run(['config', '--end-of-options', 'remote.origin.url', url], { gitDir });
      if (this.base !== latest) await this.run(['update-ref', '--end-of-options', `refs/heads/${branch}`, this.base!], { gitDir });
      await copyFile(this.baseIndex, join(gitDir, 'index'));
      await cp(gitDir, join(staging, 'git'), { recursive: true });
      await rm(join(this.deps.repoDir, '.git'), { recursive: true, force: true });
      await rename(join(staging, 'git'), join(this.deps.repoDir, '.git'));
    } finally {
      await rm(made, { recursive: true, force: true });
      await rm(staging, { recursive: true, force: true });
    }
  }
}

/** The diff as status.result.diff holds it: cut at a line end within maxChars, saying how many lines are left out. */
export function cutDiff(full: string, maxChars: number): string {
  if (full.length <= maxChars) return full;
  const kept = full.slice(0, full.lastIndexOf('\n', maxChars - 200) + 1);
  const hidden = full.split('\n').length - kept.split('\n').length;
  return `${kept}… diff cut by Tether: ${hidden} more lines are not shown here (approving publishes all of them) …\n`;
}

/** "make the navbar sticky" → "Tether: make the navbar sticky" (first line, ≤ 72 chars) + the prompt. */
export function commitMessage(prompt: string, session: string): string {
  const text = forgeText(prompt.replace(/^script:\s*/, '')).trim();
  const first = (text.split('\n')[0] ?? '').replace(/\s+/g, ' ').trim() || 'changes from Tether';
  const subject = first.length > 64 ? `${first.slice(0, 63)}…` : first;
  return `${subject}\n\nRequested from the phone through Tether (session ${session}).\n\n${text.slice(0, 2000)}\n`;
}
