// What the local node needs of the folders it gives containers, checked before anything starts
// (as root, when containers run as their own users): each fails with one line naming the folder
// and the fix.
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import { DEFAULT_IMAGE_DIR } from '../config.ts';
import { canSwitchUser } from './identity.ts';

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/** The folder and its parents that exist, the folder first. */
function existingChain(dir: string): string[] {
  const chain: string[] = [];
  for (let path = dir; ; path = dirname(path)) {
    if (statSync(path, { throwIfNoEntry: false })) chain.push(path);
    if (path === dirname(path)) return chain;
  }
}

/**
 * The image store and every folder above it must be root's, writable by no one else and open to
 * every user: Node looks for packages in a node_modules folder of each parent of a module, so a
 * parent an agent can write (a world-writable /tmp) would let it put code on the runner's path.
 */
export function checkStoreFolder(store: string): void {
  for (const dir of existingChain(store)) {
    const { uid, mode } = statSync(dir);
    const [problem, so] =
      uid !== 0
        ? [`belongs to uid ${uid}`, "an agent could put code on the runner's module path"]
        : mode & 0o022
          ? [
              `is writable by users other than root (mode ${octal(mode)})`,
              "an agent could put code on the runner's module path",
            ]
          : (mode & 0o001) === 0
            ? [`is closed to other users (mode ${octal(mode)})`, "the containers' users cannot reach the images"]
            : [];
    if (problem) {
      throw new Error(
        `cannot keep the containers' images in ${store}: ${dir} ${problem}, so ${so}; ` +
          'set TETHER_IMAGE_DIR to a folder only root can write whose parents are open to all ' +
          `(the default is ${DEFAULT_IMAGE_DIR})`,
      );
    }
  }
}

/** Every parent of the state folder (the folder itself the node agent opens) must be open to every user. */
export function checkStateFolder(stateDir: string): void {
  for (const dir of existingChain(dirname(stateDir))) {
    const { mode } = statSync(dir);
    if ((mode & 0o001) === 0) {
      throw new Error(
        `the containers' users cannot reach the state folder ${stateDir}: ${dir} is closed to other users ` +
          `(mode ${octal(mode)}); set TETHER_STATE_DIR to a folder outside it ` +
          '(for example TETHER_STATE_DIR=/var/lib/tether)',
      );
    }
  }
}

/** The state folder and the image store of a stack whose containers run as their own users. */
export function checkNodeFolders(stateDir: string, store: string): void {
  if (!canSwitchUser()) return;
  checkStateFolder(stateDir);
  checkStoreFolder(store);
}
