// Typed access to Session objects; every component goes through this, each writing under its own
// field manager.
import { type Session, type SessionSpec, type SessionStatus } from '../session/schema.ts';
import type { KubeConnection } from './connection.ts';
import { collectionPath, KINDS, resource, type List, type Resource } from './resources.ts';

/** The field manager each component writes Sessions under (visible in metadata.managedFields). */
export const FIELD_MANAGERS = {
  controller: 'tether-controller',
  relay: 'tether-relay',
  runner: 'tether-runner',
} as const;

export type SessionList = List<Session>;

/** The Session collection of a namespace; informers watch it, the client reads and writes below it. */
export const sessionsPath = (namespace: string) => collectionPath(KINDS.sessions, namespace);

export class SessionClient {
  private readonly sessions: Resource<Session>;

  constructor(kube: KubeConnection, fieldManager?: string) {
    this.sessions = resource<Session>(kube, KINDS.sessions, fieldManager);
  }

  get(namespace: string, name: string): Promise<Session | undefined> {
    return this.sessions.get(namespace, name);
  }

  list(namespace: string, labelSelector?: string): Promise<SessionList> {
    return this.sessions.list(namespace, labelSelector);
  }

  create(
    namespace: string,
    name: string,
    spec: SessionSpec,
    metadata: Partial<Session['metadata']> = {},
  ): Promise<Session> {
    return this.sessions.create({ metadata: { ...metadata, name, namespace }, spec } as Session);
  }

  /** JSON merge patch of metadata and/or spec. */
  patch(namespace: string, name: string, patch: { metadata?: object; spec?: Partial<SessionSpec> }): Promise<Session> {
    return this.sessions.mergePatch(namespace, name, patch);
  }

  /**
   * JSON merge patch through the status subresource. With resourceVersion the write is
   * optimistic: a concurrent change makes it fail with 409.
   */
  patchStatus(
    namespace: string,
    name: string,
    status: Partial<SessionStatus> | Record<string, unknown>,
    resourceVersion?: string,
  ): Promise<Session> {
    const body = { ...(resourceVersion ? { metadata: { resourceVersion } } : {}), status };
    return this.sessions.mergePatch(namespace, name, body, 'status');
  }

  delete(namespace: string, name: string): Promise<void> {
    return this.sessions.delete(namespace, name);
  }
}
