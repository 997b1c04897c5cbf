// Between two Sessions on one Pod: the agent container's temporary folder emptied, once nothing of
// the agent runs, whatever the agent made of it — folders closed to their owner, links, sockets, fifos.
// Links are removed, never followed: a link to the workspace takes nothing of the workspace with it.
import { chmod, lstat, readdir, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** Removes everything in `dir` (not `dir` itself); the number of entries it held. Throws on the first that stays. */
export async function emptyFolder(dir: string): Promise<number> {
  const stat = await lstat(dir);
  if (!stat.isDirectory()) throw new Error(`${dir} is not a folder`);
  const entries = await readdir(dir);
  for (const name of entries) await removeEntry(join(dir, name));
  return entries.length;
}

async function removeEntry(path: string): Promise<void> {
  const stat = await lstat(path);
  if (!stat.isDirectory()) return unlink(path);
  await chmod(path, 0o700); // a folder its owner closed (mode 000) cannot be listed or emptied
  for (const name of await readdir(path)) await removeEntry(join(path, name));
  await rmdir(path);
}
