// The runner image's compile cache on the local node. The image build fills /app/.compile-cache as
// each user its containers run as (runner-image/Dockerfile, runner-image/compile-cache.ts); the
// local node runs containers from the checkout, so the stack fills a folder of its state the same
// way before any Pod runs, and every Pod process gets NODE_COMPILE_CACHE as the image's ENV gives it.
import { execFile } from 'node:child_process';
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { canSwitchUser, openStatePath, sharedNodeBinary } from './node-agent/identity.ts';

const run = promisify(execFile);

/** Fills the cache as each of `users` (as this process's own user when it cannot switch); returns the Pods' environment for it. */
export async function fillCompileCache(options: { stateDir: string; repoRoot: string; users: number[]; env: Record<string, string> }): Promise<Record<string, string>> {
  const dir = join(options.stateDir, 'compile-cache');
  const asUsers = canSwitchUser();
  openStatePath(options.stateDir, asUsers);
  await mkdir(dir, { recursive: true });
  // Like /tmp: each user makes and owns its own folder in it (Node keeps one cache per user).
  if (asUsers) await chmod(dir, 0o1777);
  const node = asUsers ? sharedNodeBinary(options.stateDir) : process.execPath;
  const script = join(options.repoRoot, 'runner-image', 'compile-cache.ts');
  const env = { ...options.env, NODE_COMPILE_CACHE: dir };
  await Promise.all((asUsers ? options.users : [undefined]).map((uid) => run(node, [script], { env, cwd: options.repoRoot, uid, gid: uid })));
  return { NODE_COMPILE_CACHE: dir };
}
