// Turns Session changes into messages. Level-based: on any change (or timer) the Session is
// compared with what the phone has been told (the tether.dev/delivered annotation). The new
// annotation is written first, with the object's resourceVersion, and only the writer that wins
// sends: a second relay replica or a stale cache gets 409 and re-reads. At most once, never twice.
import type { Logger } from 'pino';
import { isConflict, isNotFound } from '../../common/kube/errors.ts';
import { createWorkQueue, type WorkQueue, type WorkResult } from '../../common/kube/work-queue.ts';
import type { SessionDefaults } from '../../common/session/defaults.ts';
import { phoneHash } from '../../common/session/display.ts';
import { ANNOTATION_DELIVERED } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { readDelivered, writeDelivered } from '../delivered-state.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { PhoneLanes } from '../phone-lane.ts';
import type { SessionApi, SessionStore } from '../session-store.ts';
import type { Outbox } from './outbox.ts';
import { plan } from './plan.ts';

export interface DeliveryOptions {
  store: SessionStore;
  writer: Pick<SessionApi, 'get' | 'patch'>;
  lanes: PhoneLanes;
  outbox: Outbox;
  progressBatchMs: number;
  reminderBeforeMs: number;
  defaults: SessionDefaults;
  /** Whether the relay may message this phone (its allowlist): whoever created the Session chose spec.phone. */
  isRecipient: (phone: string) => boolean;
  metrics: Pick<RelayMetrics, 'recipientsRefused'>;
  logger: Logger;
}

const MAX_CONFLICTS = 8;
/** Retry after a failed check: 500 ms, doubling, at most 30 s. */
const RETRY = { baseDelayMs: 500, maxDelayMs: 30_000 };

export class Delivery {
  private readonly o: DeliveryOptions;
  private readonly queue: WorkQueue;
  private readonly written = new Map<string, Session>();
  private readonly lastProgressAt = new Map<string, number>();
  /** Sessions whose phone is not a recipient, already logged and counted. */
  private readonly refused = new Set<string>();
  private stopped = false;

  constructor(options: DeliveryOptions) {
    this.o = options;
    this.queue = createWorkQueue({
      ...RETRY,
      // Each Session waits in its phone's lane; phones must not wait for each other's Sessions.
      concurrency: Infinity,
      handler: (key) => this.check(key),
      hooks: {
        retry: (key, retryInMs, err) => options.logger.warn(
          { session: key.split('/')[1], phoneHash: phoneHash(options.store.get(key)?.spec.phone ?? ''), err, retryInMs }, 'delivery check failed; retrying'),
      },
    });
  }

  /** Subscribes to the store; call before the informer starts so the initial list is seen. */
  start(): void {
    this.o.store.onChange((key, object) => {
      if (object) this.queue.add(key);
      else {
        this.written.delete(key);
        this.refused.delete(key);
      }
    });
    this.queue.start();
  }

  /** Stops looking at Sessions; resolves when the checks under way have finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.queue.stop();
  }

  /** One look at a Session, in its phone's lane so its messages keep their order. */
  private async check(key: string): Promise<WorkResult | void> {
    const phone = this.current(key)?.spec.phone;
    if (phone === undefined) return;
    if (!this.o.isRecipient(phone)) return this.refuseRecipient(key, phone);
    const wakeAt = await this.o.lanes.run(phone, () => this.evaluate(key));
    if (wakeAt !== undefined) return { requeueAfterMs: Math.max(0, wakeAt - Date.now()) };
  }

  private refuseRecipient(key: string, phone: string): void {
    if (this.refused.has(key)) return;
    this.refused.add(key);
    this.o.metrics.recipientsRefused.inc();
    this.o.logger.warn({ session: key.split('/')[1], phoneHash: phoneHash(phone) }, 'spec.phone is not on the allowlist; nothing is sent for this Session');
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

  /** Sends what the phone has not been told yet; returns when to look again, if a timer is due. */
  private async evaluate(key: string): Promise<number | undefined> {
    let session = this.current(key);
    let wakeAt: number | undefined;
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      if (!session || this.stopped) return wakeAt;
      const phone = session.spec.phone;
      const told = readDelivered(session);
      const next = plan(session, told, {
        now: Date.now(), progressBatchMs: this.o.progressBatchMs, reminderBeforeMs: this.o.reminderBeforeMs,
        lastProgressAt: this.lastProgressAt.get(phone) ?? 0, defaults: this.o.defaults,
      });
      if (next.wakeAt !== undefined) wakeAt = Math.min(wakeAt ?? Infinity, next.wakeAt);
      if (next.next.n === told.n) return wakeAt;
      const { namespace, name, resourceVersion } = session.metadata;
      let claimed: Session;
      try {
        claimed = await this.o.writer.patch(namespace!, name!, {
          metadata: { resourceVersion, annotations: { [ANNOTATION_DELIVERED]: writeDelivered(next.next) } },
        });
      } catch (error) {
        if (isNotFound(error)) return wakeAt;
        if (!isConflict(error)) throw error;
        session = await this.o.writer.get(namespace!, name!);
        continue;
      }
      this.written.set(key, claimed);
      await this.o.outbox.deliver(phone, next.parts);
      if (next.sentProgress) this.lastProgressAt.set(phone, Date.now());
      return wakeAt;
    }
    throw new Error(`delivered annotation kept conflicting after ${MAX_CONFLICTS} attempts`);
  }
}
