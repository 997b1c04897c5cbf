// The controller's writes and uncached reads, behind one narrow interface (so a test can
// interpose faults). Creates are idempotent: an existing object with the same name is adopted.
import type { V1PersistentVolumeClaim, V1Pod, V1Role } from '@kubernetes/client-node';
import type { KubeAccess } from '../common/kube/connection.ts';
import { isAlreadyExists, isNotFound } from '../common/kube/errors.ts';
import { MERGE_PATCH, requestJson } from '../common/kube/raw.ts';
import { FIELD_MANAGERS, SessionClient } from '../common/kube/sessions.ts';
import type { Session, SessionStatus } from '../common/session/schema.ts';
import type { RunnerIdentity } from './builders.ts';
import type { ControllerEvent } from './events.ts';

export interface ClusterOps {
  getSession(namespace: string, name: string): Promise<Session | undefined>;
  /** Optimistic: fails with 409 when the Session changed since resourceVersion. */
  patchStatus(
    namespace: string,
    name: string,
    status: Partial<SessionStatus>,
    resourceVersion: string,
  ): Promise<Session>;
  deleteSession(namespace: string, name: string): Promise<void>;
  getPod(namespace: string, name: string): Promise<V1Pod | undefined>;
  /** Creates the Pod, or returns the one that already has its name. */
  ensurePod(pod: V1Pod): Promise<V1Pod>;
  deletePod(namespace: string, name: string): Promise<void>;
  ensurePvc(pvc: V1PersistentVolumeClaim): Promise<V1PersistentVolumeClaim>;
  /**
   * The phone's runner identity with the Role's rules as given: one write (the Role's rules) when
   * `known` is the Role as cached and the binding exists; else the ServiceAccount and the Role, then
   * the RoleBinding (its escalation check reads the Role).
   */
  ensureIdentity(identity: RunnerIdentity, known?: { role: V1Role; bound: boolean }): Promise<void>;
  /** Creates the Event; one that already exists (same name) was recorded before. */
  recordEvent(event: ControllerEvent): Promise<void>;
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

const core = (namespace: string, plural: string) => `/api/v1/namespaces/${namespace}/${plural}`;
const rbacPath = (namespace: string, plural: string) =>
  `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/${plural}`;
const meta = (object: { metadata?: { namespace?: string; name?: string } }) =>
  object.metadata as { namespace: string; name: string };

/** Plain requests (no client-node: its API classes cost the controller ~80 MiB of memory). */
export function kubeClusterOps(kube: KubeAccess): ClusterOps {
  const sessions = new SessionClient(kube, FIELD_MANAGERS.controller);
  const get = <T>(path: string) => requestJson<T>(kube, path);
  const create = <T>(path: string, body: unknown) => requestJson<T>(kube, path, { method: 'POST', body });
  const ignore = async () => undefined;
  return {
    getSession: (namespace, name) => sessions.get(namespace, name),
    patchStatus: (namespace, name, status, resourceVersion) =>
      sessions.patchStatus(namespace, name, status, resourceVersion),
    deleteSession: (namespace, name) => sessions.delete(namespace, name),
    getPod: (namespace, name) => unlessMissing(() => get<V1Pod>(`${core(namespace, 'pods')}/${name}`)),
    ensurePod: (pod) => {
      const { namespace, name } = meta(pod);
      return orExisting(
        () => create<V1Pod>(core(namespace, 'pods'), pod),
        () => get<V1Pod>(`${core(namespace, 'pods')}/${name}`),
      );
    },
    deletePod: async (namespace, name) => {
      await unlessMissing(() => requestJson(kube, `${core(namespace, 'pods')}/${name}`, { method: 'DELETE' }));
    },
    ensurePvc: (pvc) => {
      const { namespace, name } = meta(pvc);
      const path = core(namespace, 'persistentvolumeclaims');
      return orExisting(
        () => create<V1PersistentVolumeClaim>(path, pvc),
        () => get<V1PersistentVolumeClaim>(`${path}/${name}`),
      );
    },
    ensureIdentity: async ({ serviceAccount, role, roleBinding }, known) => {
      const { namespace, name } = meta(role);
      const setRules = (resourceVersion?: string) =>
        requestJson<V1Role>(kube, `${rbacPath(namespace, 'roles')}/${name}`, {
          method: 'PATCH',
          contentType: MERGE_PATCH,
          body: { metadata: resourceVersion ? { resourceVersion } : {}, rules: role.rules },
        });
      if (known?.bound && (await unlessMissing(() => setRules(known.role.metadata?.resourceVersion)))) return;
      await Promise.all([
        orExisting(() => create(core(meta(serviceAccount).namespace, 'serviceaccounts'), serviceAccount), ignore),
        known
          ? setRules(known.role.metadata?.resourceVersion)
          : orExisting(
              () => create(rbacPath(namespace, 'roles'), role),
              () => setRules(),
            ),
      ]);
      await orExisting(() => create(rbacPath(namespace, 'rolebindings'), roleBinding), ignore);
    },
    recordEvent: async (event: ControllerEvent) => {
      await orExisting(
        () => create(`/apis/events.k8s.io/v1/namespaces/${meta(event).namespace}/events`, event),
        ignore,
      );
    },
  };
}
