// The controller's own status writes, held until the Session cache shows them. A write names the
// resourceVersion it replaces, so the object went from that version straight to the written one:
// while the cache still holds the replaced version, the write's response is the newer Session and
// a pass (or a wake's filter) reads it instead of the cache. Any later version in the cache ends
// that, with no ordering of resourceVersions assumed. Without this, a child's event (the workspace
// PVC the pass just made) woke a pass that wrote from the older version and met 409 Conflict.
import type { Session } from '../common/session/schema.ts';
import { withoutManagedFields } from '../common/kube/informer.ts';
import { trimSession } from './cache.ts';

interface OwnWrite {
  written: Session;
  /** The version the write replaced (its precondition). */
  replaced: string;
  /** The pass acted on the written status, so the write's own watch event needs no pass. */
  actedOn: boolean;
}

export interface OwnWrites {
  /** A successful status write: its response, the version it replaced, and whether its pass acted on it. */
  record(written: Session, replaced: string, actedOn: boolean): void;
  /** The Session as the controller knows it: its own write while the cache still holds what that write replaced. */
  view(key: string, cached: Session | undefined): Session | undefined;
  /** The cache changed for `key`: whether that change asks for a pass (not the watch event of a write its pass acted on). */
  observed(key: string, session: Session | undefined): boolean;
}

const keyOf = (session: Session) => `${session.metadata.namespace}/${session.metadata.name}`;

export function createOwnWrites(): OwnWrites {
  const writes = new Map<string, OwnWrite>();
  return {
    record(written, replaced, actedOn) {
      trimSession(withoutManagedFields(written));
      writes.set(keyOf(written), { written, replaced, actedOn });
    },
    view(key, cached) {
      const own = writes.get(key);
      return own && cached && cached.metadata.resourceVersion === own.replaced ? own.written : cached;
    },
    observed(key, session) {
      const own = writes.get(key);
      const version = session?.metadata.resourceVersion;
      // The replaced version itself arrives late when the pass read the API ahead of the cache.
      if (version !== own?.replaced) writes.delete(key);
      return !(own?.actedOn && version === own.written.metadata.resourceVersion);
    },
  };
}
