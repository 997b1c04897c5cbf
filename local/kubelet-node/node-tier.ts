// The kubelet node tier: a private containerd (CRI), a real kubelet and kube-scheduler on the
// local control plane, and a pool of local PersistentVolumes. Host-network Pods only.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import type { ControlPlane } from '../control-plane/control-plane.ts';
import type { Managed } from '../control-plane/processes.ts';
import { startContainerd, type Containerd } from './containerd.ts';
import { startKubelet, type Kubelet } from './kubelet.ts';
import { removeEverything, unmountUnder, waitForNodeReady } from './node-lifecycle.ts';
import { startScheduler } from './scheduler.ts';
import { PAUSE_IMAGE, TOOLS_IMAGE } from './settings.ts';
import { createVolumePool } from './volume-pool.ts';

const run = promisify(execFile);
const here = import.meta.dirname;

export interface NodeTier {
  nodeName: string;
  dir: string;
  containerd: Containerd;
  kubelet: Kubelet;
  /** Folder behind each pool PersistentVolume, by PV name. */
  volumes: Map<string, string>;
  stop(): Promise<void>;
}

/** Builds (once, cached) kubelet and kube-scheduler; returns their folder. */
async function nodeBinaries(): Promise<string> {
  const { stdout } = await run('bash', [join(here, 'build-node.sh')], { maxBuffer: 1 << 20, timeout: 3_600_000 });
  return stdout.trim().split('\n').at(-1)!;
}

/** Builds (once, cached) the pause and tools image tars. */
async function localImages(): Promise<{ pause: string; tools: string }> {
  const { stdout } = await run('bash', [join(here, 'images', 'build-images.sh'), PAUSE_IMAGE, TOOLS_IMAGE]);
  const [pause, tools] = stdout.trim().split('\n');
  return { pause: pause!, tools: tools! };
}

export async function startNodeTier(plane: ControlPlane): Promise<NodeTier> {
  const [binDir, images] = await Promise.all([nodeBinaries(), localImages()]);
  const dir = await mkdtemp(join(tmpdir(), 'tether-kubelet-node-'));
  const nodeName = `tether-node-${randomBytes(3).toString('hex')}`;
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfig);
  const started: Array<{ stop(): Promise<void> }> = [];
  let containerd: Containerd | undefined;
  let kubelet: Kubelet | undefined;
  const stop = async (keepLogs = false) => {
    if (containerd) await removeEverything(kc, nodeName, containerd, kubelet);
    for (const part of started.reverse()) await part.stop();
    await unmountUnder(dir);
    if (!keepLogs) await rm(dir, { recursive: true, force: true });
  };
  try {
    containerd = await startContainerd(join(dir, 'containerd'), images.pause);
    started.push(containerd);
    await containerd.importImage(images.tools);
    const scheduler: Managed = await startScheduler(dir, binDir, plane.server, plane.pki);
    started.push({ stop: () => scheduler.stop() });
    kubelet = await startKubelet({
      dir: join(dir, 'kubelet'),
      binDir,
      server: plane.server,
      pki: plane.pki,
      nodeName,
      runtimeEndpoint: containerd.endpoint,
    });
    started.push(kubelet);
    await waitForNodeReady(kc, nodeName, kubelet);
    const volumes = await createVolumePool(kc, join(dir, 'volumes'), nodeName);
    return { nodeName, dir, containerd, kubelet, volumes, stop: () => stop() };
  } catch (error) {
    await stop(true); // the error names a log file in the tier's folder
    throw error;
  }
}
