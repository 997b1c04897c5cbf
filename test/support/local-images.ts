// Images as the local node agent stages them (local/node-agent/image-store.ts), for tests that
// run code as the containers' users: the runner image, and the node agent tests' probe image
// (the probe "containers" of test/fixtures and what they import).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostEnv, imageStoreDir } from '../../local/config.ts';
import { canSwitchUser } from '../../local/node-agent/identity.ts';
import { RUNNER_IMAGE, type ImageContent } from '../../local/node-agent/image-content.ts';
import { stageImage, type StagedImage } from '../../local/node-agent/image-store.ts';

export const PROBE_IMAGE_NAME = 'tether-probe:test';

const PROBE_IMAGE: ImageContent = {
  name: 'tether-probe',
  paths: ['package.json', 'package-lock.json', 'common', 'controller', 'local', 'test/fixtures'],
  packages: (repoRoot) =>
    Object.keys(
      (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { dependencies: Record<string, string> })
        .dependencies,
    ),
};

export const REPO_ROOT = join(import.meta.dirname, '../..');

/** The probe image on this machine (staged as root; the checkout itself otherwise). */
export function stageProbeImage(stateDir: string): Promise<StagedImage> {
  return stageImage(PROBE_IMAGE, {
    repoRoot: REPO_ROOT,
    stateDir,
    store: imageStoreDir(),
    asUsers: canSwitchUser(),
    env: hostEnv(),
  });
}

/** The runner image staged in the node's store (root only), as the local stack's containers run it. */
export function stagedRunnerImage(): Promise<StagedImage> {
  return stageImage(RUNNER_IMAGE, {
    repoRoot: REPO_ROOT,
    stateDir: REPO_ROOT,
    store: imageStoreDir(),
    asUsers: true,
    env: hostEnv(),
  });
}
