// The local node's images. A container runs what its image holds, not the checkout: as root,
// running each container as its own user, the node agent stages every image it has into a store
// only root can write (image-content.ts says what an image holds, stage-files.ts how it is
// staged) — the checkout may lie in a folder those users cannot enter (root's home, a 0700
// temporary folder), and no agent may be able to change code the supervisor runs. Not as root
// every container runs as the node agent's own user, and the image's /app is the checkout.
//
//   <store>/<image>-<checkout key>/app             the image's /app
//                                 /bin/node        its Node.js
//                                 /compile-cache/<uid>  Node's compile cache, one per user
//                                 /scratch         files being staged
//                                 /checkout        the checkout's path: once it is gone, so is the image
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fillCompileCache } from '../staged-compile-cache.ts';
import { checkStoreFolder } from './folder-checks.ts';
import { IMAGE_PATH, imageFiles, type ImageContent } from './image-content.ts';
import { ownFolder, stageFiles, type StageCounts } from './stage-files.ts';

export interface StagedImage {
  /** The image's /app. */
  app: string;
  /** The image's Node.js binary (a container's `node`). */
  node: string;
  /** One compile cache folder per user under it (see compileCacheOf). */
  compileCache: string;
  /** Its containers' PATH (undefined when the image is the checkout: the node agent's own). */
  path?: string;
  /** What staging did (undefined when the image is the checkout). */
  counts?: StageCounts;
}

export interface StageOptions {
  repoRoot: string;
  /** The node's state folder: the compile cache when the image is the checkout. */
  stateDir: string;
  store: string;
  /** Root running containers as their own users: stage. Otherwise the image is the checkout. */
  asUsers: boolean;
  /** Environment of the image's build step. */
  env: Record<string, string>;
}

/** Whether a process of that pid is there (one of another user's counts). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** A root-only scratch folder, without the files of stagers that died mid-write. */
function scratchFolder(dir: string): string {
  const scratch = join(dir, 'scratch');
  ownFolder(scratch);
  chmodSync(scratch, 0o700);
  for (const name of readdirSync(scratch))
    if (!alive(Number(name.split('-')[0]))) rmSync(join(scratch, name), { force: true });
  return scratch;
}

/** The folder of `image` staged from `checkout` in `store`. */
export const imageFolder = (store: string, image: ImageContent, checkout: string): string =>
  join(store, `${image.name}-${createHash('sha256').update(realpathSync(checkout)).digest('hex').slice(0, 12)}`);

const checkoutOf = (dir: string) =>
  existsSync(join(dir, 'checkout')) ? readFileSync(join(dir, 'checkout'), 'utf8') : undefined;

/** Removes the images staged from checkouts that are no longer there. */
function pruneImagesOfGoneCheckouts(store: string): void {
  for (const name of readdirSync(store)) {
    const checkout = checkoutOf(join(store, name));
    if (checkout !== undefined && !existsSync(checkout)) rmSync(join(store, name), { recursive: true, force: true });
  }
}

/** Stages `image` from the checkout (see the file's comment) and runs its build step. */
export async function stageImage(image: ImageContent, options: StageOptions): Promise<StagedImage> {
  if (!options.asUsers) {
    const staged = {
      app: options.repoRoot,
      node: process.execPath,
      compileCache: join(options.stateDir, 'compile-cache'),
    };
    mkdirSync(staged.compileCache, { recursive: true });
    await fillCompileCache(image, staged, [process.getuid?.() ?? 0], options.env, false);
    return staged;
  }
  checkStoreFolder(options.store);
  const checkout = realpathSync(options.repoRoot);
  const dir = imageFolder(options.store, image, checkout);
  ownFolder(dir);
  pruneImagesOfGoneCheckouts(options.store);
  if (checkoutOf(dir) !== checkout) writeFileSync(join(dir, 'checkout'), checkout, { mode: 0o644 });
  const scratch = scratchFolder(dir);
  const app = stageFiles(checkout, imageFiles(checkout, image), join(dir, 'app'), scratch);
  const node = stageFiles(dirname(process.execPath), [basename(process.execPath)], join(dir, 'bin'), scratch);
  const staged = {
    app: join(dir, 'app'),
    node: join(dir, 'bin', basename(process.execPath)),
    compileCache: join(dir, 'compile-cache'),
    path: `${join(dir, 'bin')}:${IMAGE_PATH}`,
  };
  ownFolder(staged.compileCache);
  const counts = {
    linked: app.linked + node.linked,
    copied: app.copied + node.copied,
    kept: app.kept + node.kept,
    removed: app.removed + node.removed,
  };
  const unchanged = counts.linked + counts.copied + counts.removed === 0;
  await fillCompileCache(image, staged, image.compileCache?.users ?? [], options.env, unchanged);
  return { ...staged, counts };
}
