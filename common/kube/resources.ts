// One typed handle per resource kind, so no caller builds an API path: `resource(kube, KINDS.pods)`
// reads and writes Pods, `.collectionPath(ns)` is what an informer watches.
import { GROUP, PLURAL, VERSION } from '../session/schema.ts';
import type { KubeConnection } from './connection.ts';
import { isAlreadyExists, isNotFound } from './errors.ts';
import { MERGE_PATCH, requestJson } from './raw.ts';

export interface Kind {
  /** `/api/v1` for the core group, `/apis/<group>/<version>` for the others. */
  readonly prefix: string;
  readonly plural: string;
  /** Sent as apiVersion on created objects that lack one. */
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

const kindOf = (group: string, version: string, plural: string, kind: string, namespaced = true): Kind => ({
  prefix: group ? `/apis/${group}/${version}` : `/api/${version}`,
  plural,
  apiVersion: group ? `${group}/${version}` : version,
  kind,
  namespaced,
});

/** Every kind Tether's deployables read or write. */
export const KINDS = {
  sessions: kindOf(GROUP, VERSION, PLURAL, 'Session'),
  pods: kindOf('', 'v1', 'pods', 'Pod'),
  persistentVolumeClaims: kindOf('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
  configMaps: kindOf('', 'v1', 'configmaps', 'ConfigMap'),
  secrets: kindOf('', 'v1', 'secrets', 'Secret'),
  serviceAccounts: kindOf('', 'v1', 'serviceaccounts', 'ServiceAccount'),
  services: kindOf('', 'v1', 'services', 'Service'),
  roles: kindOf('rbac.authorization.k8s.io', 'v1', 'roles', 'Role'),
  roleBindings: kindOf('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding'),
  events: kindOf('events.k8s.io', 'v1', 'events', 'Event'),
  leases: kindOf('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  tokenReviews: kindOf('authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview', false),
} as const;

interface Named {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

export interface List<T> {
  items: T[];
  resourceVersion: string;
}

export interface Resource<T extends Named> {
  /** The collection of a namespace (of the cluster for a cluster-scoped kind): what an informer watches. */
  collectionPath(namespace?: string): string;
  /** undefined when there is no such object. */
  get(namespace: string, name: string): Promise<T | undefined>;
  list(namespace: string, labelSelector?: string): Promise<List<T>>;
  /** In the object's own namespace; fails with 409 AlreadyExists when its name is taken. */
  create(object: T): Promise<T>;
  /** Creates the object, or returns the one that already has its name. */
  createOrGet(object: T): Promise<T>;
  /** PUT: optimistic on the object's metadata.resourceVersion (409 when it changed). */
  replace(object: T): Promise<T>;
  /** JSON merge patch (RFC 7386), of the object or of a subresource such as `status`. */
  mergePatch(namespace: string, name: string, patch: object, subresource?: string): Promise<T>;
  /** Deletes the object; one already gone is not an error. */
  delete(namespace: string, name: string): Promise<void>;
}

/** The collection of a namespace (of the cluster for a cluster-scoped kind): what an informer watches. */
export const collectionPath = (kind: Kind, namespace?: string) =>
  kind.namespaced ? `${kind.prefix}/namespaces/${namespace}/${kind.plural}` : `${kind.prefix}/${kind.plural}`;

const nameOf = (object: Named) => {
  const name = object.metadata?.name;
  if (!name) throw new Error('the object has no metadata.name');
  return name;
};

/** The handle of one kind over a process's connection; writes are made under `fieldManager`. */
export function resource<T extends Named>(kube: KubeConnection, kind: Kind, fieldManager?: string): Resource<T> {
  const collection = (namespace?: string) => collectionPath(kind, namespace);
  const objectPath = (namespace: string, name: string, subresource?: string) =>
    `${collection(namespace)}/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ''}`;
  const query = { fieldManager };
  const withType = (object: T) => ({ apiVersion: kind.apiVersion, kind: kind.kind, ...object });
  const namespaceOf = (object: T) => object.metadata?.namespace ?? '';

  const handle: Resource<T> = {
    collectionPath: collection,
    async get(namespace, name) {
      try {
        return await requestJson<T>(kube, objectPath(namespace, name));
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async list(namespace, labelSelector) {
      type Raw = { items: T[]; metadata?: { resourceVersion?: string } };
      const list = await requestJson<Raw>(kube, collection(namespace), { query: { labelSelector } });
      return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    create: (object) =>
      requestJson<T>(kube, collection(namespaceOf(object)), { method: 'POST', body: withType(object), query }),
    async createOrGet(object) {
      try {
        return await handle.create(object);
      } catch (error) {
        if (!isAlreadyExists(error)) throw error;
        const existing = await handle.get(namespaceOf(object), nameOf(object));
        if (!existing) throw error;
        return existing;
      }
    },
    replace: (object) =>
      requestJson<T>(kube, objectPath(namespaceOf(object), nameOf(object)), {
        method: 'PUT',
        body: withType(object),
        query,
      }),
    mergePatch: (namespace, name, patch, subresource) =>
      requestJson<T>(kube, objectPath(namespace, name, subresource), {
        method: 'PATCH',
        body: patch,
        contentType: MERGE_PATCH,
        query,
      }),
    async delete(namespace, name) {
      try {
        await requestJson(kube, objectPath(namespace, name), { method: 'DELETE' });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
  };
  return handle;
}
