// Git objects in the runner's own code: blob ids computed in Node (so an unchanged file costs a
// read and a hash), trees as `ls-tree -r -z` and `diff-tree -r -z` list them, a tree written by
// one `git fast-import` from data the runner passes (never a path git opens), and blobs read back
// with one `git cat-file --batch`. No git here is given a work tree.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { RunningGit } from './spawn.ts';
import type { Readable, Writable } from 'node:stream';

export type Mode = '100644' | '100755' | '120000' | '160000';
const MODES = new Set<string>(['100644', '100755', '120000', '160000']);

/** One entry of a tree listed recursively (no folders): a file, a symlink or a gitlink. */
export interface TreeEntry {
  path: string;
  mode: Mode;
  id: string;
}

/** A blob's id as git computes it: the hash of `blob <size>\0<bytes>`. */
export function blobId(data: Buffer, algorithm: 'sha1' | 'sha256'): string {
  return createHash(algorithm).update(`blob ${data.length}\0`).update(data).digest('hex');
}

/** The paths of NUL-separated records, each `<meta>\t<path>` (ls-tree -z) or `<meta>\0<path>` (diff-tree -z). */
function records(out: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  for (let start = 0; start < out.length;) {
    const end = out.indexOf(0, start);
    parts.push(out.subarray(start, end < 0 ? out.length : end));
    start = end < 0 ? out.length : end + 1;
  }
  return parts;
}

/** A path as text, when its bytes are UTF-8 (else undefined: the runner cannot open it by that name). */
function utf8(bytes: Buffer): string | undefined {
  const text = bytes.toString('utf8');
  return Buffer.from(text).equals(bytes) ? text : undefined;
}

/** The base tree, `ls-tree -r -z <tree>`: entries by path, the folders that hold them, every blob id. */
export class BaseTree {
  readonly entries = new Map<string, TreeEntry>();
  /** Entries whose path is not UTF-8: the walk cannot see them, so they are carried over unchanged. */
  readonly unnamed: Array<{ path: Buffer; mode: Mode; id: string }> = [];
  readonly ids = new Set<string>();
  private readonly folders = new Set<string>();
  readonly tree: string;

  constructor(tree: string, lsTree: Buffer) {
    this.tree = tree;
    for (const record of records(lsTree)) {
      const tab = record.indexOf(9);
      const [mode, , id] = record.subarray(0, tab).toString().split(' ') as [Mode, string, string];
      const raw = record.subarray(tab + 1);
      const path = utf8(raw);
      this.ids.add(id);
      if (path === undefined) {
        this.unnamed.push({ path: raw, mode, id });
        continue;
      }
      this.entries.set(path, { path, mode, id });
      for (let slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/', slash + 1))
        this.folders.add(path.slice(0, slash));
    }
  }

  /** Every entry the runner can name. */
  all(): TreeEntry[] {
    return [...this.entries.values()];
  }

  /** Whether the base tracks anything below the folder `path`. */
  holdsBelow(path: string): boolean {
    return this.folders.has(path);
  }
}

/** `diff-tree -r -z --no-renames <from> <to>`: what to write (mode and id) or remove (mode undefined) per path. */
export function treeChanges(out: Buffer): Array<{ path: string; mode?: Mode; id: string }> {
  const parts = records(out);
  const changes: Array<{ path: string; mode?: Mode; id: string }> = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const [, mode, , id] = parts[i]!.toString().slice(1).split(' ') as [string, string, string, string];
    const path = utf8(parts[i + 1]!);
    if (path === undefined) continue; // a name the runner cannot write; the work tree keeps what it has there
    changes.push(MODES.has(mode) ? { path, mode: mode as Mode, id } : { path, id });
  }
  return changes;
}

/** A path for fast-import: C-quoted when it starts with `"` or holds a line feed. */
export function fastImportPath(path: Buffer): Buffer {
  if (path[0] !== 0x22 && !path.includes(0x0a)) return path;
  let quoted = '"';
  for (const byte of path) {
    if (byte === 0x22 || byte === 0x5c) quoted += `\\${String.fromCharCode(byte)}`;
    else if (byte === 0x0a) quoted += '\\n';
    else if (byte < 0x20 || byte === 0x7f) quoted += `\\${byte.toString(8).padStart(3, '0')}`;
    else quoted += String.fromCharCode(byte);
  }
  return Buffer.from(`${quoted}"`, 'latin1');
}

async function write(to: Writable, ...chunks: Buffer[]): Promise<void> {
  for (const chunk of chunks) if (!to.write(chunk)) await once(to, 'drain');
}

/**
 * A tree written by one `git fast-import --done --cat-blob-fd=1` whose stdin is `input`: new blobs
 * as they are found, then a commit of exactly the given entries on a scratch ref, and `ls` of its
 * root tree, which fast-import prints.
 */
export class TreeWriter {
  private readonly marks = new Map<string, number>();
  private readonly lines: Buffer[] = [];
  private readonly input: Writable;
  private readonly committer: string;
  /** Writes to fast-import, one after another (blobs come from reads running at once). */
  private writing = Promise.resolve();

  constructor(input: Writable, committer: string) {
    this.input = input;
    this.committer = committer;
    this.input.write('feature done\n');
  }

  /** A blob the store may not have yet. */
  async blob(id: string, data: Buffer): Promise<void> {
    if (this.marks.has(id)) return;
    const mark = this.marks.size + 1;
    this.marks.set(id, mark);
    this.writing = this.writing.then(() =>
      write(this.input, Buffer.from(`blob\nmark :${mark}\ndata ${data.length}\n`), data, Buffer.from('\n')),
    );
    await this.writing;
  }

  entry(path: Buffer, mode: Mode, id: string): void {
    const mark = this.marks.get(id);
    this.lines.push(
      Buffer.concat([Buffer.from(`M ${mode} ${mark ? `:${mark}` : id} `), fastImportPath(path), Buffer.from('\n')]),
    );
  }

  /** Ends the stream: the commit, `ls` of its tree, `done`. */
  async finish(): Promise<void> {
    await this.writing;
    const commit = this.marks.size + 1;
    const head =
      `commit refs/tether/snapshot\nmark :${commit}\n` + `committer ${this.committer} 0 +0000\ndata 0\ndeleteall\n`;
    await write(this.input, Buffer.from(head), ...this.lines, Buffer.from(`\nls :${commit} ""\ndone\n`));
    this.input.end();
  }
}

/** The root tree's id in fast-import's answer to `ls :<commit> ""`. */
export function writtenTree(stdout: string): string {
  const match = /^040000 tree ([0-9a-f]{40,64})\t/m.exec(stdout);
  if (!match) throw new Error(`git fast-import did not name the tree it wrote: ${stdout.slice(0, 200)}`);
  return match[1]!;
}

/** The objects `git cat-file --batch` prints for the ids written to its stdin, in order. */
export async function* batchObjects(stdout: Readable): AsyncGenerator<Buffer> {
  let chunks: Buffer[] = [];
  let length = 0;
  let want: number | undefined; // the size of the object whose header was read
  const take = (from: number) => {
    const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
    chunks = [all.subarray(from)];
    length = all.length - from;
    return all;
  };
  for await (const chunk of stdout as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    length += chunk.length;
    for (;;) {
      if (want === undefined) {
        const all = take(0);
        const newline = all.indexOf(0x0a);
        if (newline < 0) break;
        const header = all.subarray(0, newline).toString();
        const size = /^[0-9a-f]+ \w+ (\d+)$/.exec(header);
        if (!size) throw new Error(`git cat-file: ${header}`);
        want = Number(size[1]);
        take(newline + 1);
        continue;
      }
      // Only a whole object (and its line feed) is joined: a large one arrives in many chunks.
      if (length < want + 1) break;
      yield Buffer.from(take(want + 1).subarray(0, want));
      want = undefined;
    }
  }
}

/** The blobs' contents, in order, from one `git cat-file --batch` (started by `start`). */
export async function* readBlobs(start: () => RunningGit, ids: string[]): AsyncGenerator<Buffer> {
  if (ids.length === 0) return;
  const { stdin, stdout, done } = start();
  stdin.end(ids.map((id) => `${id}\n`).join(''));
  try {
    yield* batchObjects(stdout);
    await done;
  } finally {
    stdout.destroy();
    await done.catch(() => undefined);
  }
}
