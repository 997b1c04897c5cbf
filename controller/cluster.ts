// The controller's writes and uncached reads, behind one narrow interface (so a test can
// interpose faults). Creates are idempotent: an existing object with the same name is adopted.
import {
  CoreV1Api, RbacAuthorizationV1Api, type KubeConfig, type V1PersistentVolumeClaim, type V1Pod,
} from '@kubernetes/client-node';
import { isAlreadyExists, isNotFound } from '../common/kube/errors.ts';
import { FIELD_MANAGERS, SessionClient } from '../common/kube/sessions.ts';
import type { Session, SessionStatus } from '../common/session/schema.ts';
import type { RunnerRbac } from './builders.ts';

export interface ClusterOps {
  getSession(namespace: string, name: string): Promise<Session | undefined>;
  /** Optimistic: fails with 409 when the Session changed since resourceVersion. */
  patchStatus(namespace: string, name: string, status: Partial<SessionStatus>, resourceVersion: string): Promise<Session>;
  deleteSession(namespace: string, name: string): Promise<void>;
  getPod(namespace: string, name: string): Promise<V1Pod | undefined>;
  /** Creates the Pod, or returns the one that already has its name. */
  ensurePod(pod: V1Pod): Promise<V1Pod>;
  deletePod(namespace: string, name: string): Promise<void>;
  getPvc(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined>;
  ensurePvc(pvc: V1PersistentVolumeClaim): Promise<V1PersistentVolumeClaim>;
  ensureRbac(rbac: RunnerRbac): Promise<void>;
}

async function orExisting<T>(create: () => Promise<T>, read: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    return read();
  }
}

async function unlessMissing<T>(call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export function kubeClusterOps(kc: KubeConfig): ClusterOps {
  const sessions = new SessionClient(kc, FIELD_MANAGERS.controller);
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  return {
    getSession: (namespace, name) => sessions.get(namespace, name),
    patchStatus: (namespace, name, status, resourceVersion) => sessions.patchStatus(namespace, name, status, resourceVersion),
    deleteSession: (namespace, name) => sessions.delete(namespace, name),
    getPod: (namespace, name) => unlessMissing(() => core.readNamespacedPod({ namespace, name })),
    ensurePod: (pod) => {
      const { namespace, name } = pod.metadata as { namespace: string; name: string };
      return orExisting(() => core.createNamespacedPod({ namespace, body: pod }), () => core.readNamespacedPod({ namespace, name }));
    },
    deletePod: async (namespace, name) => {
      await unlessMissing(() => core.deleteNamespacedPod({ namespace, name }));
    },
    getPvc: (namespace, name) => unlessMissing(() => core.readNamespacedPersistentVolumeClaim({ namespace, name })),
    ensurePvc: (pvc) => {
      const { namespace, name } = pvc.metadata as { namespace: string; name: string };
      return orExisting(
        () => core.createNamespacedPersistentVolumeClaim({ namespace, body: pvc }),
        () => core.readNamespacedPersistentVolumeClaim({ namespace, name }),
      );
    },
    ensureRbac: async ({ serviceAccount, role, roleBinding }) => {
      const namespace = serviceAccount.metadata!.namespace!;
      const ignore = async () => undefined;
      await Promise.all([
        orExisting(() => core.createNamespacedServiceAccount({ namespace, body: serviceAccount }), ignore),
        orExisting(() => rbac.createNamespacedRole({ namespace, body: role }), ignore),
        orExisting(() => rbac.createNamespacedRoleBinding({ namespace, body: roleBinding }), ignore),
      ]);
    },
  };
}
