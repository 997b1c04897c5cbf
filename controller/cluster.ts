// The controller's writes and uncached reads, behind one narrow interface (so a test can
// interpose faults). Creates are idempotent: an existing object with the same name is adopted.
import {
  CoreV1Api, EventsV1Api, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type EventsV1Event, type KubeConfig, type V1PersistentVolumeClaim,
  type V1Pod, type V1Role,
} from '@kubernetes/client-node';
import { isAlreadyExists, isNotFound } from '../common/kube/errors.ts';
import { FIELD_MANAGERS, SessionClient } from '../common/kube/sessions.ts';
import type { Session, SessionStatus } from '../common/session/schema.ts';
import type { RunnerIdentity } from './builders.ts';

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
  /**
   * The phone's runner identity with the Role's rules as given: one write (the Role's rules) when
   * `known` is the Role as cached, else the ServiceAccount and RoleBinding first, then the Role.
   */
  ensureIdentity(identity: RunnerIdentity, known?: V1Role): Promise<void>;
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

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

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
    ensureIdentity: async ({ serviceAccount, role, roleBinding }, known) => {
      const { namespace, name } = role.metadata as { namespace: string; name: string };
      const setRules = (resourceVersion?: string) => rbac.patchNamespacedRole(
        { namespace, name, body: { metadata: resourceVersion ? { resourceVersion } : {}, rules: role.rules } }, mergePatch);
      if (known && await unlessMissing(() => setRules(known.metadata?.resourceVersion))) return;
      await Promise.all([
        orExisting(() => core.createNamespacedServiceAccount({ namespace: serviceAccount.metadata!.namespace!, body: serviceAccount }), ignore),
        orExisting(() => rbac.createNamespacedRoleBinding({ namespace, body: roleBinding }), ignore),
      ]);
      await orExisting(() => rbac.createNamespacedRole({ namespace, body: role }), () => setRules());
    },
    recordEvent: async (event) => {
      await orExisting(() => events.createNamespacedEvent({ namespace: event.metadata!.namespace!, body: event }), ignore);
    },
  };
}
