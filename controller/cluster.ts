// The controller's writes and uncached reads, behind one narrow interface (so a test can
// interpose faults). Creates are idempotent: an existing object with the same name is adopted.
import type {
  V1PersistentVolumeClaim,
  V1Pod,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import type { KubeConnection } from '../common/kube/connection.ts';
import { isAlreadyExists, isNotFound } from '../common/kube/errors.ts';
import { KINDS, resource, type Resource } from '../common/kube/resources.ts';
import { FIELD_MANAGERS, SessionClient } from '../common/kube/sessions.ts';
import type { Session, SessionStatus } from '../common/session/schema.ts';
import type { RunnerIdentity } from './identity.ts';
import type { ControllerEvent } from './events.ts';
import type { TokenWrites } from './runner-token.ts';

export interface ClusterOps extends TokenWrites {
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

/** Creates the object; one that already exists (same name) is left as it is. */
async function createUnlessExists<T>(create: () => Promise<T>): Promise<void> {
  try {
    await create();
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
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

/**
 * Creates the Secret, or replaces the one of that name without reading it (an unconditional PUT):
 * the controller may write the Secrets it makes but read none (the answers are dropped).
 */
export async function putSecret(secrets: Resource<V1Secret>, secret: V1Secret): Promise<void> {
  try {
    await secrets.create(secret);
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    await secrets.replace(secret);
  }
}

const meta = (object: { metadata?: { namespace?: string; name?: string } }) =>
  object.metadata as { namespace: string; name: string };

/** Plain requests (no client-node: its API classes cost the controller ~80 MiB of memory). */
export function kubeClusterOps(kube: KubeConnection): ClusterOps {
  const manager = FIELD_MANAGERS.controller;
  const sessions = new SessionClient(kube, manager);
  const pods = resource<V1Pod>(kube, KINDS.pods, manager);
  const pvcs = resource<V1PersistentVolumeClaim>(kube, KINDS.persistentVolumeClaims, manager);
  const accounts = resource<V1ServiceAccount>(kube, KINDS.serviceAccounts, manager);
  const roles = resource<V1Role>(kube, KINDS.roles, manager);
  const bindings = resource<V1RoleBinding>(kube, KINDS.roleBindings, manager);
  const events = resource<ControllerEvent>(kube, KINDS.events, manager);
  const secrets = resource<V1Secret>(kube, KINDS.secrets, manager);
  return {
    getSession: (namespace, name) => sessions.get(namespace, name),
    patchStatus: (namespace, name, status, resourceVersion) =>
      sessions.patchStatus(namespace, name, status, resourceVersion),
    deleteSession: (namespace, name) => sessions.delete(namespace, name),
    getPod: (namespace, name) => pods.get(namespace, name),
    ensurePod: (pod) => pods.createOrGet(pod),
    deletePod: (namespace, name) => pods.delete(namespace, name),
    ensurePvc: (pvc) => pvcs.createOrGet(pvc),
    ensureIdentity: async ({ serviceAccount, role, roleBinding }, known) => {
      const { namespace, name } = meta(role);
      // Optimistic on the cached Role when there is one (409 when it changed meanwhile).
      const setRules = (resourceVersion?: string) =>
        roles.mergePatch(namespace, name, { metadata: resourceVersion ? { resourceVersion } : {}, rules: role.rules });
      if (known?.bound && (await unlessMissing(() => setRules(known.role.metadata?.resourceVersion)))) return;
      await Promise.all([
        createUnlessExists(() => accounts.create(serviceAccount)),
        known
          ? setRules(known.role.metadata?.resourceVersion)
          : roles.create(role).catch((error: unknown) => {
              if (!isAlreadyExists(error)) throw error;
              return setRules();
            }),
      ]);
      await createUnlessExists(() => bindings.create(roleBinding));
    },
    recordEvent: (event) => createUnlessExists(() => events.create(event)),
    putSecret: (secret) => putSecret(secrets, secret),
    annotatePod: (namespace, name, annotations) => pods.mergePatch(namespace, name, { metadata: { annotations } }),
  };
}
