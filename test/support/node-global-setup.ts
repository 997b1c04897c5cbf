// vitest global setup of the `node` project: one control plane and one kubelet node tier
// (containerd, kubelet, kube-scheduler, local volume pool) per run.
import type { TestProject } from 'vitest/node';
import { startControlPlane, type ControlPlane } from '../../local/control-plane/control-plane.ts';
import { startNodeTier, type NodeTier } from '../../local/kubelet-node/node-tier.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    binDir: string;
    nodeName: string;
    podLogsDir: string;
    containerdSocket: string;
    /** containerd's registry hosts folder (trustLoopbackRegistry in local/kubelet-node/containerd.ts). */
    registryHostsDir: string;
    /** Folder behind each pool PersistentVolume, by PV name. */
    volumeFolders: Record<string, string>;
  }
}

let plane: ControlPlane | undefined;
let tier: NodeTier | undefined;

export async function setup(project: TestProject) {
  const started = Date.now();
  plane = await startControlPlane();
  const planeReady = Date.now();
  tier = await startNodeTier(plane);
  console.log(
    `[kubelet-node] control plane in ${planeReady - started} ms, node ${tier.nodeName} Ready in ` +
      `${Date.now() - planeReady} ms (${tier.dir})`,
  );
  project.provide('kubeconfig', plane.kubeconfig);
  project.provide('binDir', plane.binDir);
  project.provide('nodeName', tier.nodeName);
  project.provide('podLogsDir', tier.kubelet.podLogsDir);
  project.provide('containerdSocket', tier.containerd.socket);
  project.provide('registryHostsDir', tier.containerd.registryHostsDir);
  project.provide('volumeFolders', Object.fromEntries(tier.volumes));
}

export async function teardown() {
  const started = Date.now();
  await tier?.stop();
  await plane?.stop();
  console.log(`[kubelet-node] stopped in ${Date.now() - started} ms`);
}
