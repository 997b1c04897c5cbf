// The runner Pods the proxy checks supervisor and agent credentials against: an informer over the
// runner namespace, narrowed to what callers.ts reads (the uid; whether the Pod is done).
import type { V1Pod } from '@kubernetes/client-node';
import type pino from 'pino';
import type { KubeConnection } from '../common/kube/connection.ts';
import { createInformer } from '../common/kube/informer.ts';
import { collectionPath, KINDS } from '../common/kube/resources.ts';
import type { PodView, WatchedPods } from './callers.ts';

export const podViewOf = (pod: V1Pod | undefined): PodView | undefined =>
  pod?.metadata?.uid
    ? {
        uid: pod.metadata.uid,
        done:
          Boolean(pod.metadata.deletionTimestamp) ||
          pod.status?.phase === 'Succeeded' ||
          pod.status?.phase === 'Failed',
      }
    : undefined;

export interface PodsInformer extends WatchedPods {
  start(): Promise<void>;
  stop(): void;
}

export function informedPods(kube: KubeConnection, namespace: string, logger: pino.Logger): PodsInformer {
  const informer = createInformer<V1Pod>({
    kube,
    path: collectionPath(KINDS.pods, namespace),
    logger: logger.child({ informer: 'pods' }),
    onRestart: (reason) => logger.warn({ reason }, 'runner pod watch restarted'),
    // Only the uid, the deletion mark and the phase are read: the spec (its env among it) is not kept.
    trim: (object) => {
      const pod = object as V1Pod;
      delete pod.spec;
      pod.status = { phase: pod.status?.phase };
    },
  });
  return {
    get: (name) => podViewOf(informer.get(`${namespace}/${name}`)),
    onChange: (handler) => informer.onChange((key, pod) => handler(key.slice(key.indexOf('/') + 1), podViewOf(pod))),
    start: () => informer.start(),
    stop: () => informer.stop(),
  };
}
