// A watch on the stack's runner namespace that records every runner Pod it sees, from the test's
// start: which were created (one entry per uid, in order), for which phone and workspace, and when
// each was seen being deleted and gone. The live-runner tests count Pods with it.
import type { V1Pod } from '@kubernetes/client-node';
import pino from 'pino';
import { expect } from 'vitest';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { createInformer } from '../../common/kube/informer.ts';
import { LABEL_PHONE_HASH, LABEL_WORKSPACE } from '../../common/session/names.ts';
import type { E2E } from './e2e.ts';
import { eventually } from './eventually.ts';

export interface SeenPod {
  name: string;
  uid: string;
  phoneHash?: string;
  workspace?: string;
  /** When the watch first saw it (ms since the epoch). */
  seenAt: number;
  /** When the watch first saw its deletionTimestamp, or it gone without one. */
  deletingAt?: number;
  /** When the watch saw it gone. */
  goneAt?: number;
}

export interface RunnerPods {
  /** Every runner Pod seen, in the order first seen; of one phone (by its hash) when given. */
  created(phoneHash?: string): SeenPod[];
  /** The Pod of this name as seen last (the newest uid). */
  seen(name: string): SeenPod | undefined;
  /** Waits until the Pod of this name is gone; returns what was seen of it. */
  gone(name: string, timeoutMs?: number): Promise<SeenPod>;
  stop(): void;
}

export async function watchRunnerPods(e2e: E2E): Promise<RunnerPods> {
  const pods: SeenPod[] = [];
  const byName = (name: string) => pods.findLast((p) => p.name === name);
  const informer = createInformer<V1Pod>({
    kube: connectionFromKubeConfig(e2e.kubeConfig),
    path: `/api/v1/namespaces/${e2e.stack.runnerNamespace}/pods`,
    logger: pino({ level: 'silent' }),
  });
  informer.onChange((key, pod) => {
    const name = key.split('/')[1]!;
    if (!pod) {
      const last = byName(name);
      if (last && !last.goneAt) Object.assign(last, { goneAt: Date.now(), deletingAt: last.deletingAt ?? Date.now() });
      return;
    }
    const uid = pod.metadata!.uid!;
    let entry = pods.find((p) => p.uid === uid);
    if (!entry) {
      entry = {
        name,
        uid,
        phoneHash: pod.metadata?.labels?.[LABEL_PHONE_HASH],
        workspace: pod.metadata?.labels?.[LABEL_WORKSPACE],
        seenAt: Date.now(),
      };
      pods.push(entry);
    }
    if (pod.metadata?.deletionTimestamp && !entry.deletingAt) entry.deletingAt = Date.now();
  });
  await informer.start();
  return {
    created: (phoneHash) => pods.filter((p) => phoneHash === undefined || p.phoneHash === phoneHash),
    seen: byName,
    gone: (name, timeoutMs = 120_000) =>
      eventually(
        () => {
          const pod = byName(name);
          expect(pod, `runner Pod ${name} was never seen`).toBeDefined();
          expect(pod!.goneAt, `runner Pod ${name} is still there`).toBeDefined();
          return pod!;
        },
        timeoutMs,
        100,
      ),
    stop: () => informer.stop(),
  };
}
