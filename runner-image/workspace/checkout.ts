// The work tree written from the store through workspace-fs; git itself never writes it (its
// checkout reads `.gitattributes` from the work tree, and blocks on a FIFO there). The paths where
// two trees differ are removed or written: files 0666 or 0777 less the umask (as git writes them),
// symlinks as links, a gitlink as an empty folder. Each folder is opened relative to the one
// before, never through a symlink; whatever stands where a folder or file goes (a file, a link, a
// FIFO, a folder) is removed first, as git's forced checkout does. Removing a path removes the
// folders it leaves empty. Folders are pinned when opened (workspace-fs openEntry); a step that
// meets an entry changing under it (a process that outlived the freeze) starts over, a few times.
import type { Mode } from '../git/objects.ts';
import { readWorkspaceFile, withWorkspaceDir, WorkspaceRefused, type WorkspaceDir } from './fs.ts';

/** A path to write (mode and blob id) or, without a mode, to remove. */
export interface Change {
  path: string;
  mode?: Mode;
  id: string;
}

/** The folders along the last path used, kept open so that paths in one folder reuse them. */
class Cursor {
  private readonly open: Array<{ name: string; dir: WorkspaceDir }> = [];
  private readonly root: WorkspaceDir;

  constructor(root: WorkspaceDir) {
    this.root = root;
  }

  /**
   * The folder `parts` below the root; made (anything else in the way removed) when `make`, else undefined when absent.
   */
  async at(parts: string[], make: boolean): Promise<WorkspaceDir | undefined> {
    let kept = 0;
    while (kept < this.open.length && kept < parts.length && this.open[kept]!.name === parts[kept]) kept++;
    await this.close(kept);
    for (const name of parts.slice(kept)) {
      const parent = this.current();
      const opened = await parent.openEntry(name, 0);
      if (opened?.type !== 'dir' && !make) return undefined;
      if (opened && opened.type !== 'dir') await parent.remove(name);
      this.open.push({ name, dir: opened?.type === 'dir' ? opened.dir : await parent.makeDir(name, 0o777) });
    }
    return this.current();
  }

  /** Closes the folders deeper than `depth`. */
  async close(depth = 0): Promise<void> {
    while (this.open.length > depth) await this.open.pop()!.dir.close();
  }

  private current(): WorkspaceDir {
    return this.open.at(-1)?.dir ?? this.root;
  }
}

const split = (path: string) => {
  const parts = path.split('/');
  return { parts, name: parts.pop()! };
};

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? '';
/** What an entry changing between two steps makes a step fail with. */
const CHANGED = new Set(['ENOENT', 'EEXIST', 'EISDIR', 'ENOTDIR', 'ENOTEMPTY', 'ELOOP', 'EINVAL']);
const changed = (error: unknown) => error instanceof WorkspaceRefused || CHANGED.has(errorCode(error));
/** A process swapping entries as fast as it can spoils about every other try, never fifty in a row. */
const ATTEMPTS = 50;
/** Files of one folder written at once. */
const PARALLEL_WRITES = 16;

/**
 * Runs a step again from the top (folders reopened) while what it meets keeps changing; never where nothing of the
 * agent's runs.
 */
async function retrying(cursor: Cursor, path: string, step: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (!changed(error)) throw error;
      if (attempt === ATTEMPTS)
        throw new Error(`${path} kept changing while the checkout was written`, { cause: error });
      await cursor.close();
    }
  }
}

async function remove(cursor: Cursor, path: string): Promise<void> {
  const { parts, name } = split(path);
  const dir = await cursor.at(parts, false);
  if (!dir) return;
  const opened = await dir.openEntry(name, 0);
  if (opened?.type === 'dir') {
    const entries = await opened.dir.entries().finally(() => opened.dir.close());
    // A submodule's folder goes only when empty, as with git.
    if (entries.length > 0) return;
  }
  if (opened) await dir.remove(name);
  for (let depth = parts.length; depth > 0; depth--) {
    const emptied = await cursor.at(parts.slice(0, depth), false);
    if (!emptied || (await emptied.entries()).length > 0) return;
    const parent = await cursor.at(parts.slice(0, depth - 1), false);
    await parent!.remove(parts[depth - 1]!);
  }
}

/** Writes one entry into its folder: a folder in its way is removed when rename says so. */
async function writeIn(dir: WorkspaceDir, name: string, change: Change, data: Buffer | undefined): Promise<void> {
  if (change.mode === '160000') {
    if (!['dir', undefined].includes(await dir.typeOf(name))) await dir.remove(name);
    return (await dir.makeDir(name, 0o777)).close();
  }
  const put = () =>
    change.mode === '120000'
      ? dir.symlink(name, data!)
      : dir.writeFile(name, data!, change.mode === '100755' ? 0o777 : 0o666);
  await put().catch(async (error: unknown) => {
    if (errorCode(error) !== 'EISDIR' && errorCode(error) !== 'ENOTEMPTY') throw error;
    await dir.remove(name);
    await put();
  });
}

async function write(cursor: Cursor, change: Change, data: Buffer | undefined): Promise<void> {
  const { parts, name } = split(change.path);
  await writeIn((await cursor.at(parts, true))!, name, change, data);
}

/**
 * The files, each folder's written several at once into the folder opened once; a write that met
 * an entry changing under it is done again afterwards, alone and from the top.
 */
async function writeFiles(cursor: Cursor, files: Change[], contents: AsyncIterable<Buffer>): Promise<void> {
  let next = 0;
  let folder: { path?: string; dir?: WorkspaceDir; writes: Array<Promise<unknown>> } = { writes: [] };
  const again: Array<[Change, Buffer]> = [];
  const settle = async () => {
    const failed = (await Promise.allSettled(folder.writes)).find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  };
  for await (const data of contents) {
    const change = files[next++]!;
    const { parts, name } = split(change.path);
    if (parts.join('/') !== folder.path || folder.writes.length >= PARALLEL_WRITES) {
      await settle();
      folder = {
        path: parts.join('/'),
        dir: await cursor.at(parts, true).catch((e: unknown) => (changed(e) ? undefined : Promise.reject(e))),
        writes: [],
      };
    }
    const written = folder.dir
      ? writeIn(folder.dir, name, change, data)
      : Promise.reject(new WorkspaceRefused(change.path, 'its folder changed'));
    folder.writes.push(
      written.catch((error: unknown) => (changed(error) ? again.push([change, data]) : Promise.reject(error))),
    );
  }
  await settle();
  await cursor.close();
  for (const [change, data] of again) await retrying(cursor, change.path, () => write(cursor, change, data));
}

/** Applies `changes` to the checkout; `blobs` yields the contents of the given ids, in order. */
export async function applyChanges(
  checkout: WorkspaceDir,
  changes: Change[],
  blobs: (ids: string[]) => AsyncIterable<Buffer>,
): Promise<void> {
  const cursor = new Cursor(checkout);
  try {
    for (const change of changes.filter((c) => !c.mode).reverse())
      await retrying(cursor, change.path, () => remove(cursor, change.path));
    const folders = changes.filter((c) => c.mode === '160000');
    for (const change of folders) await retrying(cursor, change.path, () => write(cursor, change, undefined));
    const files = changes.filter((c) => c.mode && c.mode !== '160000');
    await writeFiles(cursor, files, blobs(files.map((c) => c.id)));
  } finally {
    await cursor.close();
  }
}

/**
 * On the workspace, beside the checkout: the commit the kept work tree is based on, as runners
 * recorded it before the store outlived its Pod. The store's own record comes first
 * (git/store-upkeep.ts); this one, which the agent can write, is read only when the store has none:
 * through workspace-fs (bounded, no link, no FIFO), and trusted only as a commit the forge's branch
 * contains.
 */
const BASE_MARKER = '.tether-repo-base';
const MARKER_BYTES = 128;

/** The recorded base, or '' when there is none (a link, a FIFO, a large file are no record). */
export async function readBaseMarker(workspace: string): Promise<string> {
  const read = await readWorkspaceFile(workspace, BASE_MARKER, MARKER_BYTES).catch((error: unknown) => {
    if (error instanceof WorkspaceRefused) return undefined;
    throw error;
  });
  return read?.data.toString().trim() ?? '';
}

/** Records the base, replacing whatever is there (a folder too) without following it. */
export async function writeBaseMarker(workspace: string, commit: string): Promise<void> {
  await withWorkspaceDir(workspace, '', async (root) => {
    await root.remove(BASE_MARKER);
    await root.writeFile(BASE_MARKER, `${commit}\n`);
  });
}
