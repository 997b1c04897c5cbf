// What a reconcile pass works with: the API server (writes and the few uncached reads), the
// informers' caches, and the expectations that say whether those caches have seen its own writes.
import type { V1PersistentVolumeClaim, V1Pod, V1Role, V1Service } from '@kubernetes/client-node';
import type pino from 'pino';
import type { Session } from '../common/session/schema.ts';
import type { ClusterOps } from './cluster.ts';
import type { ControllerConfig } from './config.ts';
import type { Expectations } from './expectations.ts';
import type { GitHubApp } from './github-app.ts';

/** The informers' view of the cluster, as a pass reads it. */
export interface ClusterCache {
  session(key: string): Session | undefined;
  pod(namespace: string, name: string): V1Pod | undefined;
  pvc(namespace: string, name: string): V1PersistentVolumeClaim | undefined;
  /** A phone's runner Role as cached, and whether its RoleBinding exists. */
  identity(namespace: string, name: string): { role: V1Role; bound: boolean } | undefined;
  /** Every Session of the same phone in the namespace, this one included or not. */
  siblings(session: Session): Session[];
  /** The runner Pods labelled with this phone hash. */
  phonePods(phoneHash: string): V1Pod[];
  /** The Sessions whose status names this runner Pod (status.podName). */
  boundTo(pod: V1Pod): Session[];
  /** A Service of the install namespace runner Pods dial by name (runner-network.ts), as cached. */
  service(name: string): V1Service | undefined;
}

export interface ReconcileDeps {
  ops: ClusterOps;
  cache: ClusterCache;
  expectations: Expectations;
  config: ControllerConfig;
  logger: pino.Logger;
  now: () => Date;
  /** Set when the install authenticates as a GitHub App: each runner Pod gets its own token. */
  github?: GitHubApp;
  /** Queues a pass for each waiting Session of the phone (ClearPhoneQueue, StartNextQueued). */
  wakeWaiting(session: Session): void;
}
