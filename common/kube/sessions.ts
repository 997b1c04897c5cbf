// Typed access to Session objects; every component goes through this.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION, type Session, type SessionSpec, type SessionStatus } from '../session/schema.ts';
import { isNotFound } from './errors.ts';

export interface SessionList {
  items: Session[];
  resourceVersion: string;
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export class SessionClient {
  private readonly api: CustomObjectsApi;

  constructor(kubeConfig: KubeConfig) {
    this.api = kubeConfig.makeApiClient(CustomObjectsApi);
  }

  private ref(namespace: string) {
    return { group: GROUP, version: VERSION, plural: PLURAL, namespace };
  }

  async get(namespace: string, name: string): Promise<Session | undefined> {
    try {
      return (await this.api.getNamespacedCustomObject({ ...this.ref(namespace), name })) as Session;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async list(namespace: string, labelSelector?: string): Promise<SessionList> {
    const list = (await this.api.listNamespacedCustomObject({ ...this.ref(namespace), labelSelector })) as {
      items: Session[];
      metadata?: { resourceVersion?: string };
    };
    return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
  }

  async create(namespace: string, name: string, spec: SessionSpec, metadata: Partial<Session['metadata']> = {}): Promise<Session> {
    const body = { apiVersion: API_VERSION, kind: KIND, metadata: { ...metadata, name, namespace }, spec };
    return (await this.api.createNamespacedCustomObject({ ...this.ref(namespace), body })) as Session;
  }

  /** JSON merge patch of metadata and/or spec. */
  async patch(namespace: string, name: string, patch: { metadata?: object; spec?: Partial<SessionSpec> }): Promise<Session> {
    return (await this.api.patchNamespacedCustomObject({ ...this.ref(namespace), name, body: patch }, mergePatch)) as Session;
  }

  /**
   * JSON merge patch through the status subresource. With resourceVersion the write is
   * optimistic: a concurrent change makes it fail with 409.
   */
  async patchStatus(namespace: string, name: string, status: Partial<SessionStatus> | Record<string, unknown>, resourceVersion?: string): Promise<Session> {
    const body = { ...(resourceVersion ? { metadata: { resourceVersion } } : {}), status };
    return (await this.api.patchNamespacedCustomObjectStatus({ ...this.ref(namespace), name, body }, mergePatch)) as Session;
  }

  async delete(namespace: string, name: string): Promise<void> {
    try {
      await this.api.deleteNamespacedCustomObject({ ...this.ref(namespace), name });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}
