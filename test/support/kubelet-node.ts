// Per-test access to the kubelet node tier: admin clients, Pod readiness, container log files
// and what containerd still runs. Logs are read from kubelet's files, never through the API
// server (that path dials the node's address).
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { eventually } from './eventually.ts';

const run = promisify(execFile);

export async function waitForPodReady(
  kc: KubeConfig,
  namespace: string,
  name: string,
  timeoutMs = 120_000,
): Promise<V1Pod> {
  const core = kc.makeApiClient(CoreV1Api);
  return eventually(
    async () => {
      const pod = await core.readNamespacedPod({ name, namespace });
      const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status !== 'True')
        throw new Error(
          `pod ${namespace}/${name} not Ready: ` +
            `${JSON.stringify(pod.status?.containerStatuses ?? pod.status?.conditions)}`,
        );
      return pod;
    },
    timeoutMs,
    250,
  );
}

export async function waitForPodGone(
  kc: KubeConfig,
  namespace: string,
  name: string,
  timeoutMs = 60_000,
): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await eventually(
    async () => {
      const found = await core.readNamespacedPod({ name, namespace }).then(
        () => true,
        () => false,
      );
      if (found) throw new Error(`pod ${namespace}/${name} still there`);
    },
    timeoutMs,
    250,
  );
}

/** The log lines of a container, from kubelet's log files (CRI format: time stream tag text). */
export async function containerLog(pod: V1Pod, container: string): Promise<string> {
  const dir = join(
    inject('podLogsDir'),
    `${pod.metadata!.namespace}_${pod.metadata!.name}_${pod.metadata!.uid}`,
    container,
  );
  const files = (await readdir(dir)).sort();
  const text = await Promise.all(files.map((f) => readFile(join(dir, f), 'utf8')));
  return text
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ').slice(3).join(' '))
    .join('\n');
}

/** Ids of the containers (sandbox included) of a Pod that have a running process in containerd. */
export async function runningContainers(podUid: string): Promise<string[]> {
  const ctr = async (...args: string[]) =>
    (await run('ctr', ['--address', inject('containerdSocket'), '-n', 'k8s.io', ...args])).stdout;
  const ofPod = new Set(
    (await ctr('containers', 'ls', '-q', `labels."io.kubernetes.pod.uid"==${podUid}`)).split('\n').filter(Boolean),
  );
  const running = (await ctr('tasks', 'ls'))
    .split('\n')
    .slice(1)
    .map((line) => line.split(/\s+/))
    .filter(([id, , status]) => id && status === 'RUNNING' && ofPod.has(id));
  return running.map(([id]) => id!);
}
