// Typed access to Session objects; every component goes through this, each writing under its own
// field manager.
import {
  API_VERSION,
  GROUP,
  KIND,
  PLURAL,
  VERSION,
  type Session,
  type SessionSpec,
  type SessionStatus,
} from '../session/schema.ts';
import type { KubeAccess } from './connection.ts';
import { isNotFound } from './errors.ts';
import { MERGE_PATCH, requestJson, type CallOptions } from './raw.ts';

/** The field manager each component writes Sessions under (visible in metadata.managedFields). */
export const FIELD_MANAGERS = {
  controller: 'tether-controller',
  relay: 'tether-relay',
  runner: 'tether-runner',
} as const;

export interface SessionList {
  items: Session[];
  resourceVersion: string;
}

/** The Session collection of a namespace; informers watch it, the client reads and writes below it. */
export const sessionsPath = (namespace: string) => `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`;

export class SessionClient {
  private readonly kube: KubeAccess;
  private readonly fieldManager?: string;

  constructor(kube: KubeAccess, fieldManager?: string) {
    this.kube = kube;
    this.fieldManager = fieldManager;
  }

  private write(path: string, options: CallOptions): Promise<Session> {
    return requestJson<Session>(this.kube, path, { ...options, query: { fieldManager: this.fieldManager } });
  }

  async get(namespace: string, name: string): Promise<Session | undefined> {
    try {
      return await requestJson<Session>(this.kube, `${sessionsPath(namespace)}/${name}`);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async list(namespace: string, labelSelector?: string): Promise<SessionList> {
    const list = await requestJson<{ items: Session[]; metadata?: { resourceVersion?: string } }>(
      this.kube,
      sessionsPath(namespace),
      { query: { labelSelector } },
    );
    return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
  }

  async create(
    namespace: string,
    name: string,
    spec: SessionSpec,
    metadata: Partial<Session['metadata']> = {},
  ): Promise<Session> {
    const body = { apiVersion: API_VERSION, kind: KIND, metadata: { ...metadata, name, namespace }, spec };
    return this.write(sessionsPath(namespace), { method: 'POST', body });
  }

  /** JSON merge patch of metadata and/or spec. */
  async patch(
    namespace: string,
    name: string,
    patch: { metadata?: object; spec?: Partial<SessionSpec> },
  ): Promise<Session> {
    return this.write(`${sessionsPath(namespace)}/${name}`, { method: 'PATCH', body: patch, contentType: MERGE_PATCH });
  }

  /**
   * JSON merge patch through the status subresource. With resourceVersion the write is
   * optimistic: a concurrent change makes it fail with 409.
   */
  async patchStatus(
    namespace: string,
    name: string,
    status: Partial<SessionStatus> | Record<string, unknown>,
    resourceVersion?: string,
  ): Promise<Session> {
    const body = { ...(resourceVersion ? { metadata: { resourceVersion } } : {}), status };
    return this.write(`${sessionsPath(namespace)}/${name}/status`, { method: 'PATCH', body, contentType: MERGE_PATCH });
  }

  async delete(namespace: string, name: string): Promise<void> {
    try {
      await requestJson(this.kube, `${sessionsPath(namespace)}/${name}`, { method: 'DELETE' });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}
