// The checkout as `git add -A` would stage it, read only through workspace-fs: a walk the runner
// controls (each folder opened relative to the one before, no symlink followed, nothing but
// regular files opened), ignore rules from `.gitignore` files read the same way and layered as git
// layers them, files tracked in the base kept even when ignored. Regular files become blobs
// (100755 when the owner's x bit is set), symlinks 120000 blobs of their target text; anything
// else, and anything git would refuse or the agent could not have read, is left out and said.
// Files are read several at once, folders one after another.
import ignoreModule, { type Ignore } from 'ignore';
import { concurrencyLimit } from '../../common/concurrency.ts';
import { blobId, type BaseTree, type Mode } from '../git/objects.ts';
import { WorkspaceRefused, type Entry, type EntryType, type Opened, type WorkspaceDir } from './fs.ts';

export interface SnapshotLimits {
  /** A larger file is left out (GitHub refuses files over 100 MB). */
  fileBytes: number;
  /** Bytes read per snapshot: more, and the snapshot is refused. */
  totalBytes: number;
  /** Files, symlinks and folders per snapshot: more, and the snapshot is refused. */
  entries: number;
  /** A larger `.gitignore` is not applied. */
  ignoreBytes: number;
  /** Folders nested deeper are left out. */
  depth: number;
}

export const SNAPSHOT_LIMITS: SnapshotLimits = {
  fileBytes: 100 * 1024 ** 2,
  totalBytes: 4 * 1024 ** 3,
  entries: 1_000_000,
  ignoreBytes: 256 * 1024,
  depth: 256,
};

/** The checkout cannot be snapshotted as a whole (too large, or changing while it is read). */
export class SnapshotRefused extends Error {}

/** A file or symlink of the snapshot; `data` when its blob is not in the base. */
export interface Found {
  path: string;
  mode: Mode;
  id: string;
  data?: Buffer;
}

export interface WalkOptions {
  base: BaseTree;
  limits: SnapshotLimits;
  /** The supervisor's uid: a file only it could read is not the agent's. */
  uid: number;
  algorithm: 'sha1' | 'sha256';
  found: (found: Found) => Promise<void>;
}

/** A `.gitignore`'s rules and the folder (`a/b/`, or `` for the top) they are relative to. */
interface Rules {
  folder: string;
  rules: Ignore;
}

/** `open`: untracked entries may be added; else only what the base tracks (an ignored folder, a nested repository). */
interface Place {
  dir: WorkspaceDir;
  prefix: string;
  rules: Rules[];
  open: boolean;
  depth: number;
}

/** Git refuses these names (verify_path with core.protectNTFS): `.git` in any case and its NTFS spellings. */
const GIT_NAME = /^(?:\.git|git~1)[. ]*(?::|$)/i;
const GITMODULES_NAME = /^(?:\.gitmodules|gitmod~\d+|gi7eba~\d+)[. ]*(?::|$)/i;
const refusedByGit = (name: string, type: EntryType) =>
  name.split('\\').some((part) => GIT_NAME.test(part) || (type === 'symlink' && GITMODULES_NAME.test(part)));

/** Git's layering: the deepest `.gitignore` with a matching pattern decides; within one, the last match. */
function ignored(levels: Rules[], path: string, folder: boolean): boolean {
  for (let i = levels.length - 1; i >= 0; i--) {
    const { folder: base, rules } = levels[i]!;
    const result = rules.test(path.slice(base.length) + (folder ? '/' : ''));
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code;
/** The entry changed between its open and the read of a symlink's target. */
const changedUnderfoot = (error: unknown) => ['EINVAL', 'ENOENT'].includes(errorCode(error) ?? '');
/**
 * How often a symlink may turn into something else between its open and the read of its target: a
 * process swapping it as fast as it can spoils about every other try, never fifty in a row.
 */
const ATTEMPTS = 50;
/** Files read at once (each at most SMALL_BYTES; a larger one waits for its turn alone). */
const PARALLEL_READS = 16;
const SMALL_BYTES = 1024 ** 2;

export class SnapshotWalk {
  private readonly options: WalkOptions;
  private bytes = 0;
  private count = 0;
  private readonly reads = concurrencyLimit(PARALLEL_READS);
  private readonly large = concurrencyLimit(1);
  /** What was left out, and why (`path (reason)`). */
  readonly leftOut: string[] = [];

  constructor(options: WalkOptions) {
    this.options = options;
  }

  /** Walks the checkout (its top-level `.git` and every entry named `.git` are never entered). */
  async walk(checkout: WorkspaceDir): Promise<void> {
    await this.folder({ dir: checkout, prefix: '', rules: [], open: true, depth: 0 }, await checkout.entries());
  }

  private async folder(place: Place, listed: Entry[]): Promise<void> {
    const own = place.open ? await this.ignoreRules(place, listed) : undefined;
    const inner = own ? { ...place, rules: [...place.rules, own] } : place;
    // Files several at once; folders one after another, so that only the folders on one path are open.
    const settled = await Promise.allSettled(
      listed.filter((e) => e.type !== 'dir').map((entry) => this.entry(inner, entry)),
    );
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    for (const entry of listed.filter((e) => e.type === 'dir')) await this.entry(inner, entry);
  }

  private async ignoreRules(place: Place, listed: Entry[]): Promise<Rules | undefined> {
    if (!listed.some((e) => e.name === '.gitignore' && e.type === 'file')) return undefined;
    const path = `${place.prefix}.gitignore`;
    const read = await place.dir.readFile('.gitignore', this.options.limits.ignoreBytes).catch((error: unknown) => {
      if (!(error instanceof WorkspaceRefused)) throw error;
      return this.leave(path, `its rules are not applied: ${error.why}`);
    });
    if (!read) return undefined;
    this.spend(read.data.length);
    const text = read.data.toString('utf8').replace(/^\uFEFF/, '');
    return {
      folder: place.prefix,
      rules: ignoreModule.default({ ignorecase: false, allowRelativePaths: true }).add(text),
    };
  }

  /**
   * One entry: judged by the type its folder listed, opened as one inode, judged again as that inode when it is
   * something else now.
   */
  private async entry(place: Place, entry: Entry): Promise<void> {
    if (entry.name === '.git') return;
    const path = place.prefix + entry.name;
    let type: EntryType = entry.type;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (!(await this.wanted(place, entry.name, path, type))) return;
      const opened = await this.open(place.dir, entry.name, path);
      if (opened === undefined) return;
      if (opened !== 'changed') {
        if (opened.type === type || (await this.wanted(place, entry.name, path, opened.type)))
          return this.take(place, path, opened);
        if (opened.type === 'dir') await opened.dir.close();
        return;
      }
      const now = await place.dir.typeOf(entry.name);
      if (now === undefined) return;
      type = now;
    }
    throw new SnapshotRefused(`${path} kept changing while the checkout was read`);
  }

  /**
   * Whether to open an entry of this type; a submodule of the base is added here, at the base's commit, its folder
   * never read.
   */
  private async wanted(place: Place, name: string, path: string, type: EntryType): Promise<boolean> {
    const verdict = this.judge(place, name, path, type);
    if (verdict === 'gitlink') await this.add(path, '160000', this.options.base.entries.get(path)!.id);
    return verdict === 'open';
  }

  /** Whether an entry of this type belongs in the snapshot (else skipped, and said when git would have had it). */
  private judge(place: Place, name: string, path: string, type: EntryType): 'skip' | 'open' | 'gitlink' {
    const { base, limits } = this.options;
    const tracked = base.entries.get(path);
    if (type === 'dir') {
      if (tracked?.mode === '160000') return 'gitlink';
      if ((!place.open || ignored(place.rules, path, true)) && !base.holdsBelow(path)) return 'skip';
    } else if (!tracked && (!place.open || ignored(place.rules, path, false))) return 'skip';
    const problem = name.includes('\uFFFD')
      ? 'its name is not UTF-8'
      : refusedByGit(name, type)
        ? 'a name git refuses'
        : type === 'dir' && place.depth >= limits.depth
          ? `nested deeper than ${limits.depth} folders`
          : type === 'other'
            ? 'not a regular file, folder or symlink'
            : undefined;
    if (!problem) return 'open';
    this.leave(path, problem);
    return 'skip';
  }

  /**
   * The entry opened as what it is (one descriptor); 'changed' when a symlink changed before its
   * target was read. Files up to SMALL_BYTES are read several at once, larger ones one at a time.
   */
  private async open(dir: WorkspaceDir, name: string, path: string): Promise<Opened | 'changed' | undefined> {
    const { fileBytes } = this.options.limits;
    const read = async () => {
      const opened = await this.reads(() => dir.openEntry(name, Math.min(fileBytes, SMALL_BYTES)));
      if (opened?.type !== 'file' || opened.data || opened.stat.size > fileBytes) return opened;
      return this.large(() => dir.openEntry(name, fileBytes));
    };
    return read().catch((error: unknown) => {
      if (errorCode(error) === 'EACCES') return this.leave(path, 'not readable by the runner');
      if (error instanceof WorkspaceRefused) return this.leave(path, error.why); // it grew past the limit while read
      if (changedUnderfoot(error)) return 'changed' as const;
      throw error;
    });
  }

  private async take(place: Place, path: string, opened: Opened): Promise<void> {
    this.countEntry();
    if (opened.type === 'dir') return this.subfolder(place, path, opened.dir);
    if (opened.type === 'symlink') {
      const target = Buffer.from(opened.target);
      return this.add(path, '120000', blobId(target, this.options.algorithm), target);
    }
    if (opened.type !== 'file') return;
    const { stat, data } = opened;
    if (!data) return this.leave(path, `larger than ${this.options.limits.fileBytes} bytes`);
    // Owned by the supervisor and closed to group and others: not a file the agent could read.
    if (stat.uid === this.options.uid && (stat.mode & 0o044) === 0)
      return this.leave(path, 'readable by the runner only');
    this.spend(data.length);
    return this.add(path, stat.mode & 0o100 ? '100755' : '100644', blobId(data, this.options.algorithm), data);
  }

  private async subfolder(place: Place, path: string, dir: WorkspaceDir): Promise<void> {
    try {
      const listed = await dir.entries();
      const below = this.options.base.holdsBelow(path);
      // A nested repository is left out, as git leaves out its files; what the base tracks there stays.
      const nested = listed.some((e) => e.name === '.git');
      if (nested && !below) return this.leave(path, 'a nested repository');
      const open = place.open && !nested && !ignored(place.rules, path, true);
      await this.folder({ dir, prefix: `${path}/`, rules: place.rules, open, depth: place.depth + 1 }, listed);
    } finally {
      await dir.close();
    }
  }

  private async add(path: string, mode: Mode, id: string, data?: Buffer): Promise<void> {
    const known = this.options.base.ids.has(id);
    await this.options.found({ path, mode, id, ...(data && !known ? { data } : {}) });
  }

  private leave(path: string, why: string): undefined {
    this.leftOut.push(`${path} (${why})`);
    return undefined;
  }

  private countEntry(): void {
    if (++this.count > this.options.limits.entries) {
      throw new SnapshotRefused(`the checkout holds more than ${this.options.limits.entries} files and folders`);
    }
  }

  private spend(bytes: number): void {
    this.bytes += bytes;
    if (this.bytes > this.options.limits.totalBytes) {
      throw new SnapshotRefused(
        `the checkout holds more than ${this.options.limits.totalBytes} bytes outside ignored files`,
      );
    }
  }
}
