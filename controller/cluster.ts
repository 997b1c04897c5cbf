// The controller's writes and uncached reads, behind one narrow interface (so a test can
// interpose faults). Creates are idempotent: an existing object with the same name is adopted.
import {
  CoreV1Api, EventsV1Api, RbacAuthorizationV1Api, type EventsV1Event, type KubeConfig, type V1PersistentVolumeClaim, type V1Pod,
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
  ensurePvc(pvc: V1PersistentVolumeClaim): Promise<V1PersistentVolumeClaim>;
  ensureRbac(rbac: RunnerRbac): Promise<void>;
  /** Creates the Event; one that already exists (same name) was recorded before. */
  recordEvent(event: EventsV1Event): Promise<void>;
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
  const events = kc.makeApiClient(EventsV1Api);
  const ignore = async () => undefined;
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
    ensurePvc: (pvc) => {
      const { namespace, name } = pvc.metadata as { namespace: string; name: string };
      return orExisting(
        () => core.createNamespacedPersistentVolumeClaim({ namespace, body: pvc }),
        () => core.readNamespacedPersistentVolumeClaim({ namespace, name }),
      );
    },
    ensureRbac: async ({ serviceAccount, role, roleBinding }) => {
      const namespace = serviceAccount.metadata!.namespace!;
      await Promise.all([
        orExisting(() => core.createNamespacedServiceAccount({ namespace, body: serviceAccount }), ignore),
        orExisting(() => rbac.createNamespacedRole({ namespace, body: role }), ignore),
        orExisting(() => rbac.createNamespacedRoleBinding({ namespace, body: roleBinding }), ignore),
      ]);
    },
    recordEvent: async (event) => {
      await orExisting(() => events.createNamespacedEvent({ namespace: event.metadata!.namespace!, body: event }), ignore);
    },
  };
}
