// The one way the supervisor touches a folder the agent can write (the workspace): every path is
// walked one component at a time from a trusted root, each opened relative to the folder before it
// (openat semantics through /proc/self/fd) with O_NOFOLLOW, so no symlink is ever followed — not
// the last component, not one in the middle, not one swapped in while the walk runs — and `..`
// never appears. Only regular files and folders are opened (a FIFO is opened without blocking and
// refused, a socket or device refused); every read is bounded in size. The supervisor reads and
// writes here only what the agent itself could have read and written through the same names.
import { constants, type Dirent, type Stats } from 'node:fs';
import {
  copyFile,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  rename,
  rmdir,
  statfs,
  symlink,
  unlink,
  type FileHandle,
} from 'node:fs/promises';

import { components, WorkspaceRefused, type Entry, type EntryType } from './path-components.ts';
export { components, WorkspaceRefused, type Entry, type EntryType } from './path-components.ts';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY, COPYFILE_EXCL } = constants;
const READ_DIR = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_DIRECTORY;
const READ_ANY = O_RDONLY | O_NOFOLLOW | O_NONBLOCK; // anything but a symlink or socket; a FIFO without waiting

/** An entry opened as what it was at one instant: a folder, a regular file (read unless too large), a link's target. */
export type Opened =
  | { type: 'dir'; dir: WorkspaceDir }
  | { type: 'file'; stat: Stats; data?: Buffer }
  | { type: 'symlink'; target: string }
  | { type: 'other' };

/** A regular file read whole, with what its inode said when it was opened. */
export interface FileRead {
  data: Buffer;
  stat: Stats;
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code;

const typeOf = (entry: Dirent | Stats): EntryType =>
  entry.isFile() ? 'file' : entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'symlink' : 'other';

function refusal(path: string, error: unknown): unknown {
  const code = errorCode(error);
  // ELOOP: a symlink where O_NOFOLLOW stood; ENOTDIR: a file or link where a folder was needed; ENXIO: a socket.
  if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EMLINK')
    return new WorkspaceRefused(path, 'a symlink or a file where a folder or file was expected');
  if (code === 'ENXIO' || code === 'ENODEV' || code === 'EOPNOTSUPP')
    return new WorkspaceRefused(path, 'not a regular file or folder');
  return error;
}

/** An open folder of the workspace; names given to its methods are single components. */
export class WorkspaceDir {
  readonly path: string;
  private readonly handle: FileHandle;

  private constructor(path: string, handle: FileHandle) {
    this.path = path;
    this.handle = handle;
  }

  /** The trusted root (a mount point the supervisor was given, never a path the agent chose). */
  static async root(path: string): Promise<WorkspaceDir> {
    return new WorkspaceDir(path, await open(path, O_RDONLY | O_DIRECTORY));
  }

  /** Opens `rel` below `root` as a folder, refusing a symlink at any component. */
  static async open(root: string, rel: string): Promise<WorkspaceDir> {
    let dir = await WorkspaceDir.root(root);
    for (const part of components(rel)) {
      try {
        const next = await dir.dir(part);
        await dir.close();
        dir = next;
      } catch (error) {
        await dir.close();
        throw error;
      }
    }
    return dir;
  }

  /** The kernel's name for `name` inside this very folder, whatever has been renamed since it was opened. */
  private at(name: string): string {
    if (components(name).length !== 1 || name.includes('/'))
      throw new WorkspaceRefused(`${this.path}/${name}`, 'not a single name');
    return `/proc/self/fd/${this.handle.fd}/${name}`;
  }

  private child(name: string): string {
    return `${this.path}/${name}`;
  }

  async dir(name: string): Promise<WorkspaceDir> {
    const handle = await open(this.at(name), READ_DIR).catch((error: unknown) => {
      throw refusal(this.child(name), error);
    });
    return new WorkspaceDir(this.child(name), handle);
  }

  /** The folder's entries as the directory itself records them (nothing followed). */
  async entries(): Promise<Entry[]> {
    const found = await readdir(`/proc/self/fd/${this.handle.fd}`, { withFileTypes: true });
    return found.map((entry) => ({ name: entry.name, type: typeOf(entry) }));
  }

  /** What `name` is, without following it; undefined when it does not exist. */
  async typeOf(name: string): Promise<EntryType | undefined> {
    return lstat(this.at(name)).then(typeOf, (error: unknown) => {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    });
  }

  /**
   * `name` as what it is at one open (no follow), used through that very descriptor: a swap after the listing cannot
   * make a folder of a symlink. A symlink (ELOOP) has its target read by name (EINVAL: no longer one).
   */
  async openEntry(name: string, maxBytes: number): Promise<Opened | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(this.at(name), READ_ANY);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ENOENT') return undefined;
      if (code === 'ELOOP') return { type: 'symlink', target: await readlink(this.at(name)) };
      if (code === 'ENXIO' || code === 'ENODEV' || code === 'EOPNOTSUPP') return { type: 'other' };
      throw error;
    }
    const stat = await handle.stat().catch(async (error: unknown) => {
      await handle.close();
      throw error;
    });
    if (stat.isDirectory()) return { type: 'dir', dir: new WorkspaceDir(this.child(name), handle) };
    try {
      if (!stat.isFile()) return { type: 'other' };
      if (stat.size > maxBytes) return { type: 'file', stat };
      return { type: 'file', stat, data: await readBounded(handle, this.child(name), maxBytes, stat.size) };
    } finally {
      await handle.close();
    }
  }

  /** A regular file's whole content, at most maxBytes (else refused); undefined when it does not exist. */
  async readFile(name: string, maxBytes: number): Promise<FileRead | undefined> {
    const opened = await this.openEntry(name, maxBytes);
    if (opened?.type === 'dir') await opened.dir.close();
    if (opened === undefined || (opened.type === 'file' && opened.data))
      return opened && { data: opened.data!, stat: opened.stat };
    if (opened.type === 'symlink')
      throw new WorkspaceRefused(this.child(name), 'a symlink or a file where a folder or file was expected');
    throw new WorkspaceRefused(
      this.child(name),
      opened.type === 'file' ? `larger than ${maxBytes} bytes` : 'not a regular file',
    );
  }

  /** A symlink's target text (the link is never followed). */
  async readLink(name: string): Promise<string> {
    return readlink(this.at(name));
  }

  /** Creates a folder (or opens the one there); a symlink or file in its place is refused. */
  async makeDir(name: string, mode = 0o755): Promise<WorkspaceDir> {
    await mkdir(this.at(name), { mode }).catch((error: unknown) => {
      if (errorCode(error) !== 'EEXIST') throw error;
    });
    return this.dir(name);
  }

  /** Writes a new file under a fresh name and renames it over `name` (a symlink there is replaced, never followed). */
  async writeFile(name: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
    const temporary = freshName();
    const handle = await open(this.at(temporary), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    try {
      await handle.writeFile(data);
    } finally {
      await handle.close();
    }
    await this.replace(temporary, name);
  }

  /** Copies a file of the supervisor's own (`source`, outside the workspace) in as `name`, like writeFile. */
  async copyIn(name: string, source: string): Promise<void> {
    const temporary = freshName();
    await copyFile(source, this.at(temporary), COPYFILE_EXCL);
    await this.replace(temporary, name);
  }

  /** Makes `name` a symlink to `target` (whatever was there is replaced, never followed). */
  async symlink(name: string, target: string | Buffer): Promise<void> {
    const temporary = freshName();
    await symlink(target, this.at(temporary));
    await this.replace(temporary, name);
  }

  private async replace(temporary: string, name: string): Promise<void> {
    await rename(this.at(temporary), this.at(name)).catch(async (error: unknown) => {
      await unlink(this.at(temporary));
      throw error;
    });
  }

  /** Removes `name` and everything below it; symlinks are removed, never followed. */
  async remove(name: string): Promise<void> {
    const type = await this.typeOf(name);
    if (type === undefined) return;
    if (type !== 'dir') return unlink(this.at(name));
    const below = await this.dir(name);
    try {
      for (const entry of await below.entries()) await below.remove(entry.name);
    } finally {
      await below.close();
    }
    await rmdir(this.at(name));
  }

  /** Moves an entry of this folder to a name in another open folder (neither name is followed). */
  async moveTo(name: string, to: WorkspaceDir, newName: string): Promise<void> {
    await rename(this.at(name), to.at(newName));
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

let made = 0;
/** A name no other write of this process uses, short enough beside any name (writes go there first). */
const freshName = () => `.tether-${process.pid}-${++made}`;

/** At most maxBytes of the file: the size it said it had (and a byte more, to see it end), then 64 KiB at a time. */
async function readBounded(handle: FileHandle, path: string, maxBytes: number, size: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(total === 0 ? size + 1 : 64 * 1024, maxBytes + 1 - total));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) return Buffer.concat(chunks, total);
    total += bytesRead;
    // A file that grew after its size was checked.
    if (total > maxBytes) throw new WorkspaceRefused(path, `larger than ${maxBytes} bytes`);
    chunks.push(chunk.subarray(0, bytesRead));
  }
}

/** Runs `use` on the folder `rel` below `root`, closing it after. */
export async function withWorkspaceDir<T>(
  root: string,
  rel: string,
  use: (dir: WorkspaceDir) => Promise<T>,
): Promise<T> {
  const dir = await WorkspaceDir.open(root, rel);
  try {
    return await use(dir);
  } finally {
    await dir.close();
  }
}

/** One regular file below `root` (`rel` names it), at most maxBytes; undefined when it does not exist. */
export async function readWorkspaceFile(root: string, rel: string, maxBytes: number): Promise<FileRead | undefined> {
  const parts = components(rel);
  const name = parts.pop();
  if (name === undefined) throw new WorkspaceRefused(rel, 'not a file');
  try {
    return await withWorkspaceDir(root, parts.join('/'), (dir) => dir.readFile(name, maxBytes));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/** Creates `rel` below `root` folder by folder (mkdir -p), refusing a symlink or file at any component. */
export async function makeWorkspaceDirs(root: string, rel: string, mode = 0o755): Promise<void> {
  let dir = await WorkspaceDir.root(root);
  try {
    for (const part of components(rel)) {
      const next = await dir.makeDir(part, mode);
      await dir.close();
      dir = next;
    }
  } finally {
    await dir.close();
  }
}

/** Free bytes on the volume of the trusted root; undefined when it cannot be had. statfs opens no file. */
export async function freeBytes(root: string): Promise<number | undefined> {
  const space = await statfs(root).catch(() => undefined);
  return space && space.bavail * space.bsize;
}
