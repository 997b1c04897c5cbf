// Puts a set of files into a folder as root's, readable by every user and writable by none but
// root (folders 0755, files 0644, or 0755 when executable): a hard link when the source already
// is exactly that (root's, that mode) and on the same file system, otherwise a copy. A file
// already staged from the same source (the same inode, or a copy of the same size and mtime) is
// left alone, so a warm run only reads metadata; anything else in the folder is removed. Each
// file is written beside the store and renamed into place: a process reading the folder sees
// the old file or the new one, and two stagers of the same files do not disturb each other.
import {
  chmodSync,
  chownSync,
  copyFileSync,
  constants,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  utimesSync,
  type Stats,
} from 'node:fs';
import { dirname, join } from 'node:path';

export interface StageCounts {
  linked: number;
  copied: number;
  kept: number;
  removed: number;
}

/** The mode a staged file gets: executable for all when its owner may execute it. */
const modeFor = (source: Stats) => (source.mode & 0o100 ? 0o755 : 0o644);

/** A source that is already what a staged file must be: a hard link to it is safe. */
const linkable = (source: Stats) => source.uid === 0 && (source.mode & 0o7777) === modeFor(source);

function isCurrent(source: Stats, target: Stats | undefined): boolean {
  if (!target?.isFile()) return false;
  if (linkable(source)) return target.ino === source.ino && target.dev === source.dev;
  return (
    target.ino !== source.ino &&
    target.uid === 0 &&
    (target.mode & 0o7777) === modeFor(source) &&
    target.size === source.size &&
    Math.abs(target.mtimeMs - source.mtimeMs) < 1
  ); // utimes takes seconds as a double
}

/** A root-owned 0755 folder at `dir`, and at each parent it makes (whatever was at `dir` before is replaced). */
export function ownFolder(dir: string): void {
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  if (stat?.isDirectory()) {
    if (stat.uid !== 0 || stat.gid !== 0) chownSync(dir, 0, 0);
    if ((stat.mode & 0o7777) !== 0o755) chmodSync(dir, 0o755);
    return;
  }
  if (stat) rmSync(dir, { recursive: true, force: true });
  const first = mkdirSync(dir, { recursive: true, mode: 0o755 })!;
  for (let made = dir; ; made = dirname(made)) {
    chmodSync(made, 0o755); // whatever the umask took away
    if (made === first) return;
  }
}

let written = 0;

/** Writes one file through a temporary name in `scratch`; true when it is a hard link. */
function place(sourcePath: string, source: Stats, target: string, scratch: string): boolean {
  const temporary = join(scratch, `${process.pid}-${++written}`);
  let linked = false;
  if (linkable(source)) {
    try {
      linkSync(sourcePath, temporary);
      linked = true;
    } catch (error) {
      // Another file system, or one without hard links: a copy.
      if (!['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
    }
  }
  if (!linked) {
    copyFileSync(sourcePath, temporary, constants.COPYFILE_FICLONE);
    chownSync(temporary, 0, 0); // the copy keeps the source's owner
    chmodSync(temporary, modeFor(source));
    utimesSync(temporary, source.atimeMs / 1000, source.mtimeMs / 1000);
  }
  if (lstatSync(target, { throwIfNoEntry: false })?.isDirectory()) rmSync(target, { recursive: true, force: true });
  renameSync(temporary, target);
  return linked;
}

/** Removes what lies under `dir` but is neither a wanted file nor a folder on the way to one. */
function prune(dir: string, relative: string, files: Set<string>, folders: Set<string>): number {
  let removed = 0;
  for (const name of readdirSync(dir)) {
    const path = relative ? `${relative}/${name}` : name;
    const full = join(dir, name);
    if (folders.has(path) && lstatSync(full).isDirectory()) removed += prune(full, path, files, folders);
    else if (!files.has(path)) {
      rmSync(full, { recursive: true, force: true });
      removed++;
    }
  }
  return removed;
}

/**
 * Stages `files` (paths relative to `sourceRoot`) at the same paths under `targetRoot`.
 * `scratch` is a root-only folder on the target's file system for the files being written.
 */
export function stageFiles(
  sourceRoot: string,
  files: readonly string[],
  targetRoot: string,
  scratch: string,
): StageCounts {
  const counts: StageCounts = { linked: 0, copied: 0, kept: 0, removed: 0 };
  const folders = new Set<string>();
  for (const file of files) for (let dir = dirname(file); dir !== '.'; dir = dirname(dir)) folders.add(dir);
  ownFolder(targetRoot);
  for (const folder of [...folders].sort()) ownFolder(join(targetRoot, folder));
  for (const file of files) {
    const sourcePath = join(sourceRoot, file);
    const source = lstatSync(sourcePath);
    if (!source.isFile())
      throw new Error(`cannot stage ${sourcePath}: not a regular file (the image takes files only)`);
    const target = join(targetRoot, file);
    if (isCurrent(source, lstatSync(target, { throwIfNoEntry: false }))) counts.kept++;
    else if (place(sourcePath, source, target, scratch)) counts.linked++;
    else counts.copied++;
  }
  counts.removed = prune(targetRoot, '', new Set(files), folders);
  return counts;
}
