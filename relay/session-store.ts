// The relay's view of the Session objects: read from the shared informer (common/kube/informer.ts),
// written through SessionClient (common/kube/sessions.ts). Both sides of the relay use these parts.
import type { Session, SessionSpec } from '../common/session/schema.ts';

/** The part of the informer the relay reads. */
export interface SessionStore {
  onChange(handler: (key: string, object: Session | undefined) => void): void;
  get(key: string): Session | undefined;
  list(): Session[];
}

/** The part of SessionClient the relay writes with. */
export interface SessionApi {
  get(namespace: string, name: string): Promise<Session | undefined>;
  create(namespace: string, name: string, spec: SessionSpec, metadata?: Partial<Session['metadata']>): Promise<Session>;
  patch(namespace: string, name: string, patch: { metadata?: object; spec?: Partial<SessionSpec> }): Promise<Session>;
}
