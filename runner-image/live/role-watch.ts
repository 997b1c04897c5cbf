// A live runner's idle watch: the phone's Role (runner-<phonehash>, beside its Sessions), which the
// controller extends with each Session it binds to a Pod. Each name newly in it is read once; a
// Session whose status names this Pod, in Starting, is the next to run. Anything else is ignored.
import type { V1Role } from '@kubernetes/client-node';
import pLimit from 'p-limit';
import type { KubeConnection } from '../../common/kube/connection.ts';
import { onceGranted } from '../../common/kube/errors.ts';
import { createInformer, type Informer } from '../../common/kube/informer.ts';
import { collectionPath, KINDS } from '../../common/kube/resources.ts';
import type { SessionClient } from '../../common/kube/sessions.ts';
import type { Logger } from '../../common/log.ts';
import type { Session } from '../../common/session/schema.ts';
import { boundHere, nextSession, unseenSessions } from './choice.ts';

export interface RoleWatchDeps {
  kube: KubeConnection;
  sessions: Pick<SessionClient, 'get'>;
  namespace: string;
  /** The phone's runner Role. */
  role: string;
  /** This Pod's name: what status.podName says of a Session bound here. */
  podName: string;
  /** Sessions already run here (or otherwise known): never looked at again. */
  seen: Iterable<string>;
  log: Logger;
  /** Wait before reading again a Session whose read failed. */
  retryMs?: number;
}

const RETRY_MS = 1000;

export class RoleWatch {
  private readonly deps: RoleWatchDeps;
  private readonly seen: Set<string>;
  private readonly found: Session[] = [];
  private readonly informer: Informer<V1Role>;
  /** One look at the Role at a time, so each name is read once. */
  private readonly serial = pLimit(1);
  private role: V1Role | undefined;
  private ended = false;
  private waiter: ((name: string | undefined) => void) | undefined;
  private retry: NodeJS.Timeout | undefined;

  constructor(deps: RoleWatchDeps) {
    this.deps = deps;
    this.seen = new Set(deps.seen);
    this.informer = createInformer<V1Role>({
      kube: deps.kube,
      path: collectionPath(KINDS.roles, deps.namespace),
      name: deps.role,
      logger: deps.log.child({ informer: 'role' }),
    });
    this.informer.onChange((_key, role) => {
      if (!role) return this.end('the Role was deleted');
      this.role = role;
      void this.look();
    });
  }

  /**
   * Resolves with the name of the next Session bound to this Pod (its name is then seen), or
   * undefined once the signal aborts or the Role is gone. One call at a time.
   */
  next(signal: AbortSignal): Promise<string | undefined> {
    // It rejects only when stopped before its first read; an idle runner stopped then has nothing to wait for.
    this.informer.start().catch(() => undefined);
    return new Promise((resolve) => {
      const done = (name: string | undefined) => {
        this.waiter = undefined;
        signal.removeEventListener('abort', onAbort);
        resolve(name);
      };
      const onAbort = () => done(undefined);
      if (signal.aborted || this.ended) return done(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiter = done;
      this.hand();
    });
  }

  stop(): void {
    this.ended = true;
    clearTimeout(this.retry);
    this.informer.stop();
    this.waiter?.(undefined);
  }

  private end(why: string): void {
    this.deps.log.info({ role: this.deps.role, why }, 'no further Session can be bound here');
    this.stop();
  }

  private hand(): void {
    const next = nextSession(this.found);
    if (!next || !this.waiter) return;
    this.found.splice(this.found.indexOf(next), 1);
    this.waiter(next.metadata.name!);
  }

  private look(): Promise<void> {
    return this.serial(async () => {
      for (const name of unseenSessions(this.role, this.seen)) {
        if (this.ended) return;
        const session = await this.read(name);
        if (session === false) return this.retryLater();
        this.seen.add(name);
        if (boundHere(session, this.deps.podName)) this.found.push(session);
        else this.deps.log.debug({ session: name }, 'not bound to this Pod: ignored');
      }
      this.hand();
    });
  }

  /** The Session (undefined when it is gone), or false when it could not be read now. */
  private async read(name: string): Promise<Session | undefined | false> {
    try {
      // The Role may name it a moment before the API server's authorizer lets this runner read it.
      return await onceGranted(() => this.deps.sessions.get(this.deps.namespace, name));
    } catch (error) {
      this.deps.log.warn({ err: error, session: name }, 'could not read a Session the Role names; reading again');
      return false;
    }
  }

  private retryLater(): void {
    this.hand();
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.look(), this.deps.retryMs ?? RETRY_MS);
    this.retry.unref();
  }
}
