// The supervisor's end of the agent channel on disk: a Unix socket in a folder only the supervisor
// may change (0755, its own), on the emptyDir both containers mount. The agent container can
// connect to the socket but can neither replace it nor put its own in its place.
import { chmod, lstat, mkdir, rm } from 'node:fs/promises';
import type { Server } from 'node:net';
import { dirname } from 'node:path';

/** Creates the socket's folder, or accepts an existing one only if it is the supervisor's own and closed to others. */
export async function prepareSocketDir(socketPath: string): Promise<void> {
  const dir = dirname(socketPath);
  try {
    await mkdir(dir, { mode: 0o755 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stat = await lstat(dir);
  const uid = process.getuid?.();
  if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o022) !== 0) {
    const found = stat.isDirectory() ? `uid ${stat.uid}, mode ${(stat.mode & 0o7777).toString(8)}` : 'something else';
    throw new Error(`${dir} must be a folder of uid ${uid} that others cannot write (found ${found})`);
  }
  await chmod(dir, 0o755); // mkdir's mode passed through the umask
  await rm(socketPath, { force: true }); // a socket left by an earlier run of this container
}

/**
 * Listens on the socket; every user may connect (the agent runs as another uid). `server` has its
 * 'connection' listener already: the agent host may connect the moment the socket exists (the
 * Pod's group can, before the chmod below), and a connection nobody listens for hangs it.
 */
export async function listenOnSocket(socketPath: string, server: Server): Promise<void> {
  await prepareSocketDir(socketPath);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  await chmod(socketPath, 0o666);
}

/** Removes the socket (in the supervisor's own folder, which the agent cannot write). */
export async function removeSocket(socketPath: string): Promise<void> {
  await rm(socketPath, { force: true });
}
