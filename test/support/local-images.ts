// Images as the local node agent stages them (local/node-agent/image-store.ts), for tests that
// run code as the containers' users: the runner image, and the node agent tests' probe image
// (the probe "containers" of test/fixtures and what they import).
import type { KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostEnv, imageStoreDir } from '../../local/config.ts';
import { canSwitchUser } from '../../local/node-agent/identity.ts';
import { RUNNER_IMAGE, type ImageContent } from '../../local/node-agent/image-content.ts';
import { stageImage, type StagedImage } from '../../local/node-agent/image-store.ts';
import { startNodeAgent, type NodeAgent } from '../../local/node-agent/node-agent.ts';
import type { NodeLayout } from '../../local/node-agent/pod-process.ts';
import pino from 'pino';

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

/** A node agent for namespace `ns` with the probe image, running containers as their users (root). */
export async function startProbeNode(
  kc: KubeConfig,
  ns: string,
  stateDir: string,
  isolatedNetwork?: NodeLayout['isolatedNetwork'],
): Promise<NodeAgent> {
  const cluster = kc.getCurrentCluster()!;
  return startNodeAgent({
    kubeConfig: kc,
    logger: pino({ level: 'warn' }),
    images: { [PROBE_IMAGE_NAME]: await stageProbeImage(stateDir) },
    stateDir,
    server: cluster.server,
    caFile: cluster.caFile!,
    nodeName: `node-${ns}`,
    namespace: ns,
    env: {},
    runAsUsers: true,
    ...(isolatedNetwork ? { isolatedNetwork } : {}),
  });
}
