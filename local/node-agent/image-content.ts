// What an image built from this repository holds under /app, for the local node agent to stage
// (image-store.ts): the checkout's files its Dockerfile copies (less what .dockerignore leaves
// out) and the npm packages it installs. test/unit/local-image-content.test.ts holds the runner
// image's definition to runner-image/Dockerfile and .dockerignore.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_UID, RUNNER_UID } from '../../controller/runner-uids.ts';
import { packageClosure } from './package-closure.ts';

export interface ImageContent {
  /** The image's folder in the store. */
  name: string;
  /** Files and folders of the checkout the image copies into /app. */
  paths: readonly string[];
  /** The npm packages the image installs into /app/node_modules (with their dependencies). */
  packages(repoRoot: string): string[];
  /** The image's build step: this script fills Node's compile cache, run as each of these users. */
  compileCache?: { script: string; users: readonly number[] };
}

/** Production dependencies the runner image uninstalls (only the relay or the controller use them). */
export const RUNNER_IMAGE_UNINSTALLS: readonly string[] = ['express', 'lru-cache', 'prom-client', 'twilio'];

export const RUNNER_IMAGE: ImageContent = {
  name: 'tether-runner',
  paths: ['package.json', 'package-lock.json', 'common', 'runner-image'],
  packages: (repoRoot) => {
    const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    return Object.keys(manifest.dependencies ?? {}).filter((name) => !RUNNER_IMAGE_UNINSTALLS.includes(name));
  },
  compileCache: { script: 'runner-image/warm-compile-cache.ts', users: [RUNNER_UID, AGENT_UID] },
};

/**
 * The images' PATH (their Dockerfiles' ENV PATH); the node agent puts the image's own bin folder, with its
 * Node.js, first.
 */
export const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Names .dockerignore leaves out of the build context at any depth. */
export const IGNORED_NAMES: readonly RegExp[] = [
  /\.test\.ts$/,
  /^node_modules$/,
  /^\.DS_Store$/,
  /^test-results$/,
  /^\.cache$/,
  /^\.tether-state$/,
  /\.log$/,
];
/** Files the image build deletes from node_modules (type declarations, source maps). */
export const DROPPED_PACKAGE_FILES = /\.d\.[mc]?ts$|\.map$/;

/** Every file under `dir` (relative to `root`) that `keep` accepts, symbolic links included as files. */
function filesUnder(root: string, dir: string, keep: (name: string) => boolean, into: string[]): void {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    if (!keep(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) filesUnder(root, path, keep, into);
    else into.push(path);
  }
}

/** The image's files, as paths relative to /app; each lies at the same path under `repoRoot`. */
export function imageFiles(repoRoot: string, image: ImageContent): string[] {
  const files: string[] = [];
  const fromCheckout = (name: string) => !IGNORED_NAMES.some((pattern) => pattern.test(name));
  for (const path of image.paths) {
    if (statSync(join(repoRoot, path)).isDirectory()) filesUnder(repoRoot, path, fromCheckout, files);
    else files.push(path);
  }
  for (const pkg of packageClosure(repoRoot, image.packages(repoRoot))) {
    // A package's own node_modules holds other packages, each staged (or not) on its own.
    filesUnder(repoRoot, pkg, (name) => name !== 'node_modules' && !DROPPED_PACKAGE_FILES.test(name), files);
  }
  return files;
}
