// Turns Session changes into messages. Level-based: on any change (or timer) the Session is
// compared with what the phone has been told (the tether.dev/delivered annotation). The new
// annotation is written first, with the object's resourceVersion, and only the writer that wins
// sends: a second relay replica or a stale cache gets 409 and re-reads. At most once, never twice.
import type { Logger } from 'pino';
import { isConflict, isNotFound } from '../../common/kube/errors.ts';
import { phoneHash } from '../../common/session/display.ts';
import { ANNOTATION_DELIVERED } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import type { Outbox } from './outbox.ts';
import { plan, readDelivered, writeDelivered } from './plan.ts';

/** The part of the shared informer (common/kube/informer.ts) the relay uses. */
export interface SessionStore {
  onChange(handler: (key: string, object: Session | undefined) => void): void;
  get(key: string): Session | undefined;
  list(): Session[];
}

/** The part of SessionClient the relay writes with. */
export interface SessionWriter {
  get(namespace: string, name: string): Promise<Session | undefined>;
  patch(namespace: string, name: string, patch: { metadata?: object }): Promise<Session>;
}

export interface DeliveryOptions {
  store: SessionStore;
  writer: SessionWriter;
  outbox: Outbox;
  progressBatchMs: number;
  reminderBeforeMs: number;
  logger: Logger;
}

const MAX_CONFLICTS = 8;

export class Delivery {
  private readonly o: DeliveryOptions;
  private readonly written = new Map<string, Session>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly lastProgressAt = new Map<string, number>();
  private readonly failures = new Map<string, number>();
  private stopped = false;

  constructor(options: DeliveryOptions) {
    this.o = options;
  }

  /** Subscribes to the store; call before the informer starts so the initial list is seen. */
  start(): void {
    this.o.store.onChange((key, object) => {
      if (object) this.schedule(key, object.spec.phone);
      else this.forget(key);
    });
  }

  stop(): void {
    this.stopped = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private forget(key: string): void {
    this.written.delete(key);
    const t = this.timers.get(key);
    if (t) clearTimeout(t.timer);
    this.timers.delete(key);
  }

  private schedule(key: string, phone: string): void {
    if (this.stopped) return;
    this.o.outbox.enqueue(phone, () => this.evaluate(key)).then(
      () => this.failures.delete(key),
      (error: unknown) => {
        const failures = (this.failures.get(key) ?? 0) + 1;
        this.failures.set(key, failures);
        const delay = Math.min(30_000, 250 * 2 ** failures);
        this.o.logger.warn({ session: key.split('/')[1], phoneHash: phoneHash(phone), err: String(error), retryInMs: delay }, 'delivery check failed; retrying');
        this.wakeAt(key, phone, Date.now() + delay);
      },
    );
  }

  private wakeAt(key: string, phone: string, at: number): void {
    if (this.stopped) return;
    const existing = this.timers.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.schedule(key, phone);
    }, Math.max(0, at - Date.now()));
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** The newest view: the informer's copy, unless the relay's own last write is ahead of it. */
  private current(key: string): Session | undefined {
    const cached = this.o.store.get(key);
    const mine = this.written.get(key);
    if (!mine) return cached;
    if (!cached || readDelivered(mine).n > readDelivered(cached).n) return mine;
    this.written.delete(key);
    return cached;
  }

  private async evaluate(key: string): Promise<void> {
    let session = this.current(key);
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      if (!session || this.stopped) return;
      const phone = session.spec.phone;
      const now = Date.now();
      const told = readDelivered(session);
      const next = plan(session, told, {
        now, progressBatchMs: this.o.progressBatchMs, reminderBeforeMs: this.o.reminderBeforeMs,
        lastProgressAt: this.lastProgressAt.get(phone) ?? 0,
      });
      if (next.wakeAt !== undefined) this.wakeAt(key, phone, next.wakeAt);
      if (next.next.n === told.n) return;
      const { namespace, name, resourceVersion } = session.metadata;
      let claimed: Session;
      try {
        claimed = await this.o.writer.patch(namespace!, name!, {
          metadata: { resourceVersion, annotations: { [ANNOTATION_DELIVERED]: writeDelivered(next.next) } },
        });
      } catch (error) {
        if (isNotFound(error)) return;
        if (!isConflict(error)) throw error;
        session = await this.o.writer.get(namespace!, name!);
        continue;
      }
      this.written.set(key, claimed);
      await this.o.outbox.deliver(phone, next.parts);
      if (next.sentProgress) this.lastProgressAt.set(phone, Date.now());
      return;
    }
    throw new Error(`delivered annotation kept conflicting after ${MAX_CONFLICTS} attempts`);
  }
}
