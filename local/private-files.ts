// Files and folders of the local stack that only their owner may use: a folder is made 0700 and a
// file 0600 — set, not added to, so a folder or file left by an older run is closed as well.
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const PRIVATE_DIR = 0o700;
export const PRIVATE_FILE = 0o600;

/** Makes `dir` (and missing parents, with the default mode) and sets it to 0700. */
export async function privateDir(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  await chmod(dir, PRIVATE_DIR);
  return dir;
}

export async function writePrivateFile(path: string, data: string | Uint8Array): Promise<void> {
  await writeFile(path, data, { mode: PRIVATE_FILE });
  await chmod(path, PRIVATE_FILE);
}

/** A random secret kept in `path` (0600): made on first use, read back after (as the chart keeps its keys). */
export async function keptSecret(path: string): Promise<string> {
  const kept = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (kept) return kept;
  const made = randomBytes(32).toString('hex');
  await writePrivateFile(path, made);
  return made;
}

/**
 * Gives every folder under `dir` (itself included) and every file to this process's user (as root),
 * folders 0700 and files 0600; symlinks are left alone.
 */
export function closeTree(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const [uid, gid] = [process.getuid!(), process.getgid!()];
  const walk = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    // Only root may, and only root needs to.
    if (uid === 0 && (stat.uid !== uid || stat.gid !== gid)) chownSync(path, uid, gid);
    chmodSync(path, stat.isDirectory() ? PRIVATE_DIR : PRIVATE_FILE);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
  };
  walk(dir);
}
