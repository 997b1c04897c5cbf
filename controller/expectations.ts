// Cache freshness after the controller's own writes, in the manner of Kubernetes' controller
// expectations: every write a pass makes (a Session's status, a runner Pod created or deleted) is
// recorded here, and one rule holds for every pass — it does not act on a cached read of an object
// until the informer has observed the controller's own last write to it. A pass that finds a write
// not yet observed does nothing and is queued again when the informer shows it. The watch event of
// a write whose pass already acted on it (a settled write) asks for no pass of its own.
//
// Observation needs no ordering of resourceVersions: a write names the version it replaced (status
// writes are optimistic), so the cache has caught up once it holds any other version, or nothing.
// As in Kubernetes, an expectation lapses after a while: a create whose watch event was compacted
// away (the object deleted before a relist) must not hold its Session's passes forever.

/** How long an own write may stay unobserved before passes read the cache regardless (client-go's 5 min). */
export const EXPECTATION_TIMEOUT_MS = 5 * 60_000;

export type CachedKind = 'sessions' | 'pods';

interface Versioned {
  metadata?: { resourceVersion?: string; deletionTimestamp?: unknown };
}

interface Expectation {
  what: 'write' | 'delete';
  /** The version the write made (its watch event is its echo). */
  version?: string;
  /** The version an update replaced; undefined for a create. */
  replaced?: string;
  /** The pass that wrote it acted on the result: its echo asks for no pass. */
  settled: boolean;
  /** Session keys whose passes wait for this write to be observed. */
  waiters: Set<string>;
  at: number;
}

export interface Expectations {
  /** The controller created (`replaced` undefined) or updated an object; `settled`: its pass acted on it. */
  wrote(kind: CachedKind, key: string, object: Versioned, replaced: string | undefined, settled: boolean): void;
  /** The controller deleted an object: the cache must show it going or gone. */
  deleted(kind: CachedKind, key: string): void;
  /** The pass that wrote this object has acted on the write after all (its echo asks for no pass). */
  settle(kind: CachedKind, key: string): void;
  /** Whether the cache has observed every own write to these objects; if not, `waiter` is queued once it has. */
  fresh(objects: ReadonlyArray<[CachedKind, string]>, waiter: string): boolean;
  /** An informer's change: whether it asks for a pass (false for the echo of a settled write). */
  observed(kind: CachedKind, key: string, object: Versioned | undefined): boolean;
}

export interface ExpectationsOptions {
  /** The object as cached now. */
  cached: Record<CachedKind, (key: string) => Versioned | undefined>;
  /** Queues a pass for a Session key whose pass waited. */
  wake: (sessionKey: string) => void;
  now?: () => number;
}

function shows(expectation: Expectation, object: Versioned | undefined): boolean {
  if (expectation.what === 'delete') return !object || Boolean(object.metadata?.deletionTimestamp);
  if (!object) return expectation.replaced !== undefined;
  return object.metadata?.resourceVersion !== expectation.replaced;
}

export function createExpectations({ cached, wake, now = Date.now }: ExpectationsOptions): Expectations {
  const pending = new Map<string, Expectation>();
  const id = (kind: CachedKind, key: string) => `${kind}:${key}`;
  const expect = (kind: CachedKind, key: string, next: Omit<Expectation, 'waiters' | 'at'>) => {
    const waiters = pending.get(id(kind, key))?.waiters ?? new Set<string>();
    pending.set(id(kind, key), { ...next, waiters, at: now() });
  };
  const lapsed = (expectation: Expectation) => now() - expectation.at >= EXPECTATION_TIMEOUT_MS;
  const met = (name: string, expectation: Expectation) => {
    pending.delete(name);
    for (const waiter of expectation.waiters) wake(waiter);
  };
  return {
    wrote(kind, key, object, replaced, settled) {
      expect(kind, key, { what: 'write', version: object.metadata?.resourceVersion, replaced, settled });
    },
    deleted(kind, key) {
      expect(kind, key, { what: 'delete', settled: true });
    },
    settle(kind, key) {
      const expectation = pending.get(id(kind, key));
      if (expectation) expectation.settled = true;
    },
    fresh(objects, waiter) {
      let fresh = true;
      for (const [kind, key] of objects) {
        const expectation = pending.get(id(kind, key));
        if (!expectation) continue;
        if (lapsed(expectation) || shows(expectation, cached[kind](key))) met(id(kind, key), expectation);
        else {
          expectation.waiters.add(waiter);
          fresh = false;
        }
      }
      return fresh;
    },
    observed(kind, key, object) {
      const expectation = pending.get(id(kind, key));
      if (!expectation || !shows(expectation, object)) return true;
      met(id(kind, key), expectation);
      const echo = expectation.what === 'delete' || object?.metadata?.resourceVersion === expectation.version;
      return !(expectation.settled && echo);
    },
  };
}
