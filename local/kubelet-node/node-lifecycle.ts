// Waiting for the node to be Ready, and leaving nothing behind: Pods removed through the API
// (kubelet stops their containers and unmounts their volumes), then whatever is left killed in
// containerd and unmounted.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Containerd } from './containerd.ts';
import type { Kubelet } from './kubelet.ts';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The control plane runs without the node lifecycle controller (the process node agent sends no
 * heartbeats), so the not-ready taint the API server puts on a new Node is lifted here, as that
 * controller would once the node reports Ready.
 */
async function untaint(core: CoreV1Api, nodeName: string): Promise<void> {
  const node = await core.readNode({ name: nodeName });
  const taints = (node.spec?.taints ?? []).filter((t) => t.key !== 'node.kubernetes.io/not-ready');
  await core.replaceNode({ name: nodeName, body: { ...node, spec: { ...node.spec, taints } } });
}

export async function waitForNodeReady(
  kc: KubeConfig,
  nodeName: string,
  kubelet: Kubelet,
  timeoutMs = 120_000,
): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const deadline = Date.now() + timeoutMs;
  let last = 'not registered';
  while (Date.now() < deadline) {
    if (kubelet.process.child.exitCode !== null)
      throw new Error(`kubelet exited (${kubelet.process.child.exitCode}); see ${kubelet.logFile}`);
    const node = await core.readNode({ name: nodeName }).catch(() => undefined);
    const ready = node?.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status === 'True') return untaint(core, nodeName);
    if (ready) last = `${ready.reason}: ${ready.message}`;
    await sleep(500);
  }
  throw new Error(`node ${nodeName} not Ready after ${timeoutMs} ms (${last})`);
}

async function podsOnNode(core: CoreV1Api, nodeName: string) {
  const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` });
  return list.items;
}

/** Deletes every Pod bound to the node and waits (bounded) until kubelet has torn them down. */
async function drain(kc: KubeConfig, nodeName: string, timeoutMs: number): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const deadline = Date.now() + timeoutMs;
  for (const pod of await podsOnNode(core, nodeName)) {
    await core
      .deleteNamespacedPod({ name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, gracePeriodSeconds: 1 })
      .catch(() => undefined);
  }
  while (Date.now() < deadline && (await podsOnNode(core, nodeName)).length > 0) await sleep(500);
}

async function killLeftoverTasks(containerd: Containerd): Promise<void> {
  const ctr = (...args: string[]) => run('ctr', ['--address', containerd.socket, '-n', 'k8s.io', ...args]);
  const { stdout } = await ctr('tasks', 'ls', '-q');
  for (const id of stdout.split('\n').filter(Boolean)) {
    await ctr('tasks', 'kill', '-s', 'SIGKILL', id).catch(() => undefined);
    await ctr('tasks', 'delete', '-f', id).catch(() => undefined);
  }
}

/** Unmounts every mount under `dir`, deepest first (tmpfs of projected tokens, bind mounts of volumes). */
export async function unmountUnder(dir: string): Promise<void> {
  const mounts = (await readFile('/proc/self/mountinfo', 'utf8'))
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point === dir || point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const point of mounts) await run('umount', ['-l', point]).catch(() => undefined);
}

export async function removeEverything(
  kc: KubeConfig,
  nodeName: string,
  containerd: Containerd,
  kubelet: Kubelet | undefined,
): Promise<void> {
  if (kubelet && kubelet.process.child.exitCode === null) await drain(kc, nodeName, 30_000).catch(() => undefined);
  await killLeftoverTasks(containerd).catch(() => undefined);
}
