// The runner image's compile cache on the local node. The image build fills /app/.compile-cache
// (runner-image/Dockerfile, runner-image/compile-cache.ts) and nothing at run time may write it; the
// local node runs containers from the checkout, so the stack fills a folder of its state before any
// Pod runs, and every Pod process gets NODE_COMPILE_CACHE as the image's ENV gives it. Node keeps
// one cache per uid (a folder named <node version tag>-<uid>): the stack fills its own, and each
// host uid a container runs as gets a read-only copy of it (hard links), made before it starts.
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { canSwitchUser, openStatePath } from './node-agent/identity.ts';

const run = promisify(execFile);

/** Every folder 0755 and file 0644, owned by the stack's user: what containers read and none may change. */
function readOnlyForAll(path: string): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  chownSync(path, process.getuid!(), process.getgid!());
  chmodSync(path, stat.isDirectory() ? 0o755 : 0o644);
  if (stat.isDirectory()) for (const entry of readdirSync(path)) readOnlyForAll(join(path, entry));
}

/** Fills the cache afresh as this process's user; returns its folder (the Pods' NODE_COMPILE_CACHE). */
export async function fillCompileCache(options: { stateDir: string; repoRoot: string; env: Record<string, string> }): Promise<string> {
  const dir = join(options.stateDir, 'compile-cache');
  openStatePath(options.stateDir, canSwitchUser());
  await rm(dir, { recursive: true, force: true }); // nothing an earlier run left in it is read
  await mkdir(dir);
  const script = join(options.repoRoot, 'runner-image', 'compile-cache.ts');
  await run(process.execPath, [script], { env: { ...options.env, NODE_COMPILE_CACHE: dir }, cwd: options.repoRoot });
  readOnlyForAll(dir);
  return dir;
}

/** Gives host uid `uid` its cache in `dir`: a read-only copy of the one filled (a no-op for the stack's own uid or one that has it). */
export function shareCompileCache(dir: string, uid: number): void {
  const own = `-${process.getuid!()}`;
  const filled = readdirSync(dir).find((name) => name.endsWith(own));
  if (!filled) return;
  const target = join(dir, `${filled.slice(0, -own.length)}-${uid}`);
  if (existsSync(target)) return;
  const staging = `${target}.${process.pid}.new`;
  mkdirSync(staging);
  for (const file of readdirSync(join(dir, filled))) linkSync(join(dir, filled, file), join(staging, file));
  readOnlyForAll(staging);
  try {
    renameSync(staging, target);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(target)) throw error;
  }
}
