// The runner image's compile cache on the local node. The image build fills /app/.compile-cache as
// each user its containers run as (runner-image/Dockerfile, runner-image/warm-compile-cache.ts); the
// local node fills the staged image's cache the same way before any Pod runs, and every container
// gets NODE_COMPILE_CACHE as the image's ENV gives it. Node keeps one cache per user; here each
// user has a folder of its own that only it can write (none is shared, none is open to all). A
// container runs as a host id of its Pod's own (node-agent/id-ranges.ts): its folder starts as a
// copy of the one filled for its container id.
import { execFile } from 'node:child_process';
import { chownSync, copyFileSync, lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ImageContent } from './node-agent/image-content.ts';

const run = promisify(execFile);

export interface CompileCacheImage {
  app: string;
  node: string;
  /** The folder holding one compile cache folder per user. */
  compileCache: string;
}

/** Copies the cache filled as `seed` into `dir`, for `uid` (Node names a cache's folder <version tag>-<uid>). */
function seedCache(from: string, seed: number, dir: string, uid: number, gid: number): void {
  for (const tagged of readdirSync(from).filter((name) => name.endsWith(`-${seed}`))) {
    const target = join(dir, `${tagged.slice(0, -String(seed).length)}${uid}`);
    mkdirSync(target, { mode: 0o700 });
    chownSync(target, uid, gid);
    for (const file of readdirSync(join(from, tagged))) {
      if (!lstatSync(join(from, tagged, file)).isFile()) continue;
      copyFileSync(join(from, tagged, file), join(target, file));
      chownSync(join(target, file), uid, gid);
    }
  }
}

/**
 * The compile cache folder of `uid` (made, and given to it, when missing or not its own; then
 * started from a copy of `seed`'s, when that uid's cache is filled).
 */
export function compileCacheOf(image: CompileCacheImage, uid: number, gid: number, seed?: number): string {
  const dir = join(image.compileCache, String(uid));
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  if (stat?.isDirectory() && stat.uid === uid) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o700 });
  chownSync(dir, uid, gid);
  const from = seed === undefined ? undefined : join(image.compileCache, String(seed));
  if (from && seed !== uid && lstatSync(from, { throwIfNoEntry: false })?.isDirectory())
    seedCache(from, seed!, dir, uid, gid);
  return dir;
}

/**
 * Runs the image's compile cache step as each of `users`, unless `unchanged` and that user's cache
 * is filled already. The users' gid is their uid, as the image build's.
 */
export async function fillCompileCache(
  content: ImageContent,
  image: CompileCacheImage,
  users: readonly number[],
  env: Record<string, string>,
  unchanged: boolean,
): Promise<void> {
  if (!content.compileCache) return;
  const script = join(image.app, content.compileCache.script);
  await Promise.all(
    users.map(async (uid) => {
      const dir = compileCacheOf(image, uid, uid);
      if (unchanged && readdirSync(dir).length > 0) return;
      const asUser = uid === process.getuid?.() ? {} : { uid, gid: uid };
      await run(image.node, [script], { env: { ...env, NODE_COMPILE_CACHE: dir }, cwd: image.app, ...asUser });
    }),
  );
}
