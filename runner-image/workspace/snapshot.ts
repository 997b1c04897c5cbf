// The checkout's snapshot: the walk (snapshot-walk.ts) finds its files and symlinks; the blobs the
// store lacks and the tree are written by one `git fast-import` (git/objects.ts), started only when
// the checkout differs from the base. What the walk left out comes back with the tree.
import type { Writable } from 'node:stream';
import { TreeWriter, writtenTree, type BaseTree } from '../git/objects.ts';
import { SnapshotWalk, type Found, type SnapshotLimits } from './snapshot-walk.ts';
import type { WorkspaceDir } from './fs.ts';

export { SNAPSHOT_LIMITS, SnapshotRefused, type SnapshotLimits } from './snapshot-walk.ts';

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** A tree of the store: the checkout's snapshot, and what was left out of it. */
export interface Snapshot {
  tree: string;
  leftOut: string[];
}

export interface BuildOptions {
  limits: SnapshotLimits;
  uid: number;
  /** `Name <email>` of the scratch commit fast-import needs. */
  committer: string;
  /** Starts `git fast-import --quiet --force --done --cat-blob-fd=1`: its stdin, and its stdout once it exits. */
  fastImport: () => { input: Writable; output: Promise<string> };
}

const sameAsBase = (found: Found[], base: BaseTree) =>
  found.length === base.entries.size &&
  found.every((f) => base.entries.get(f.path)?.mode === f.mode && base.entries.get(f.path)?.id === f.id);

/** Walks the checkout and writes its tree into the store (git runs only when it differs from the base). */
export async function buildSnapshot(checkout: WorkspaceDir, base: BaseTree, options: BuildOptions): Promise<Snapshot> {
  const found: Found[] = [];
  let git: { writer: TreeWriter; input: Writable; output: Promise<string> } | undefined;
  const start = () => {
    if (!git) {
      const { input, output } = options.fastImport();
      git = { writer: new TreeWriter(input, options.committer), input, output };
    }
    return git;
  };
  const walk = new SnapshotWalk({
    base,
    limits: options.limits,
    uid: options.uid,
    algorithm: base.tree.length === 64 ? 'sha256' : 'sha1',
    found: async (entry) => {
      found.push({ path: entry.path, mode: entry.mode, id: entry.id });
      if (entry.data) await start().writer.blob(entry.id, entry.data);
    },
  });
  try {
    await walk.walk(checkout);
  } catch (error) {
    if (!git) throw error;
    git.input.destroy();
    const failed = await git.output.then(
      () => undefined,
      (gitError: unknown) => gitError,
    );
    // A write that failed because git had exited: git's own error says why.
    throw ['EPIPE', 'ERR_STREAM_DESTROYED'].includes(errorCode(error) ?? '') && failed ? failed : error;
  }
  const leftOut = walk.leftOut.sort();
  if (!git && sameAsBase(found, base)) return { tree: base.tree, leftOut };
  const { writer, output } = start();
  for (const entry of found) writer.entry(Buffer.from(entry.path), entry.mode, entry.id);
  for (const entry of base.unnamed) writer.entry(entry.path, entry.mode, entry.id);
  await writer.finish();
  return { tree: writtenTree(await output), leftOut };
}
