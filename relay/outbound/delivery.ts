// Turns Session changes into messages. Level-based: on any change (or timer) the Session is
// compared with what the phone has been told (the tether.dev/delivered annotation). The new
// annotation is written first, with the object's resourceVersion, and only the writer that wins
// sends: a second relay replica or a stale cache gets 409 and re-reads. Progress and results: at
// most once. Prompts (a pending request): at least once — the write before the send only claims
// them (`sending`), a second write after the send records them as told.
import type { Logger } from 'pino';
import { isNotFound } from '../../common/kube/errors.ts';
import { done, retryOnConflict, type Done } from '../../common/kube/retry.ts';
import { createWorkQueue, type WorkQueue, type WorkResult } from '../../common/kube/work-queue.ts';
import type { SessionDefaults } from '../../common/session/defaults.ts';
import type { PhoneHash } from '../../common/session/phone-hash.ts';
import { ANNOTATION_DELIVERED } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { readDelivered, writeDelivered, type Delivered } from '../delivered-state.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { PhoneLanes } from '../phone-lane.ts';
import type { SessionApi, SessionStore } from '../session-store.ts';
import type { Outbox } from './outbox.ts';
import type { Part } from './owed.ts';
import { nextMessages } from './next-messages.ts';
import type { BudgetOptions } from './cadence.ts';

export interface DeliveryOptions extends BudgetOptions {
  store: SessionStore;
  writer: Pick<SessionApi, 'get' | 'patch'>;
  lanes: PhoneLanes;
  outbox: Outbox;
  reminderBeforeMs: number;
  defaults: SessionDefaults;
  /** Whether the relay may message this phone (its allowlist): whoever created the Session chose spec.phone. */
  isRecipient: (phone: string) => boolean;
  metrics: Pick<RelayMetrics, 'recipientsRefused'>;
  /** this relay's journal identity: a prompt it claimed before a restart is sent again at once */
  owner: string;
  logger: Logger;
  /** the install's keyed phone hash, for log lines */
  phoneHash: PhoneHash;
  /** the clock (tests set it); Date.now by default */
  now?: () => number;
}

/** A prompt claimed by another replica and not recorded as sent within this is sent again. */
export const PROMPT_LEASE_MS = 30_000;
/** Retry after a failed check: 500 ms, doubling, at most 30 s. */
const RETRY = { baseDelayMs: 500, maxDelayMs: 30_000 };

/** What one pass writes before it sends: the new delivered record, the messages, the prompt it claims. */
interface Claim {
  record: Delivered;
  parts: Part[];
  prompt?: string;
  wakeAt?: number;
}

export class Delivery {
  private readonly o: DeliveryOptions;
  private readonly queue: WorkQueue;
  private readonly written = new Map<string, Session>();
  /** Sessions whose phone is not a recipient, already logged and counted. */
  private readonly refused = new Set<string>();
  /** key → id of a prompt this process sent and has not yet recorded as told */
  private readonly sentPrompts = new Map<string, string>();
  private stopped = false;
  private readonly now: () => number;

  constructor(options: DeliveryOptions) {
    this.o = options;
    this.now = options.now ?? Date.now;
    this.queue = createWorkQueue({
      ...RETRY,
      // Each Session waits in its phone's lane; phones must not wait for each other's Sessions.
      concurrency: Infinity,
      handler: (key) => this.check(key),
      hooks: {
        retry: (key, retryInMs, err) =>
          options.logger.warn(
            {
              session: key.split('/')[1],
              phoneHash: options.phoneHash(options.store.get(key)?.spec.phone ?? ''),
              err,
              retryInMs,
            },
            'delivery check failed; retrying',
          ),
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
    if (wakeAt !== undefined) return { requeueAfterMs: Math.max(0, wakeAt - this.now()) };
  }

  private refuseRecipient(key: string, phone: string): void {
    if (this.refused.has(key)) return;
    this.refused.add(key);
    this.o.metrics.recipientsRefused.inc();
    this.o.logger.warn(
      { session: key.split('/')[1], phoneHash: this.o.phoneHash(phone) },
      'spec.phone is not on the allowlist; nothing is sent for this Session',
    );
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
  private evaluate(key: string): Promise<number | undefined> {
    const [namespace, name] = key.split('/') as [string, string];
    return retryOnConflict(
      async (rereads) => (rereads === 0 ? this.current(key) : await this.o.writer.get(namespace, name)),
      (session) => this.claimFor(key, session),
      (claim, session) => this.claimAndSend(key, session!, claim),
    );
  }

  /** What to write before sending (the claim), or done: nothing to send, or a sent prompt to record. */
  private async claimFor(key: string, session: Session | undefined): Promise<Claim | Done<number | undefined>> {
    if (!session || this.stopped) return done(undefined);
    const stored = readDelivered(session);
    if (stored.sending && this.sentPrompts.get(key) === stored.sending.id) {
      await this.confirm(key, session, stored.sending.id);
      return done(undefined);
    }
    const { told, leaseEndsAt } = this.asTold(stored);
    const now = this.now();
    const next = nextMessages(session, told, {
      now,
      progressBatchMs: this.o.progressBatchMs,
      progressMaxGapMs: this.o.progressMaxGapMs,
      progressMessages: this.o.progressMessages,
      sessionMessages: this.o.sessionMessages,
      reminderBeforeMs: this.o.reminderBeforeMs,
      defaults: this.o.defaults,
    });
    const wakeAt = next.wakeAt === undefined ? leaseEndsAt : Math.min(leaseEndsAt ?? Infinity, next.wakeAt);
    if (next.next.n === told.n && !(stored.sending && leaseEndsAt === undefined)) return done(wakeAt);
    const prompt = next.next.pending !== told.pending ? next.next.pending : undefined;
    const sending = prompt
      ? { id: prompt, at: now, by: this.o.owner }
      : leaseEndsAt !== undefined
        ? stored.sending
        : undefined;
    const record: Delivered = { ...next.next, n: stored.n + 1, pending: stored.pending, sending };
    return { record, parts: next.parts, prompt, wakeAt };
  }

  /** Writes the claim with the read's resourceVersion (a 409 goes back to retryOnConflict), then sends. */
  private async claimAndSend(key: string, session: Session, claim: Claim): Promise<number | undefined> {
    const { namespace, name, resourceVersion } = session.metadata;
    let claimed: Session;
    try {
      claimed = await this.o.writer.patch(namespace!, name!, {
        metadata: { resourceVersion, annotations: { [ANNOTATION_DELIVERED]: writeDelivered(claim.record) } },
      });
    } catch (error) {
      if (isNotFound(error)) return claim.wakeAt;
      throw error;
    }
    this.written.set(key, claimed);
    await this.o.outbox.deliver(session.spec.phone, claim.parts);
    if (claim.prompt) {
      this.sentPrompts.set(key, claim.prompt);
      await this.confirm(key, claimed, claim.prompt);
    }
    return claim.wakeAt;
  }

  /**
   * What to plan from. A prompt another live sender has claimed counts as told until its lease
   * ends; one whose sender is gone (this journal before a restart, or a lease run out) as not told.
   */
  private asTold(stored: Delivered): { told: Delivered; leaseEndsAt?: number } {
    const { sending, ...rest } = stored;
    if (!sending) return { told: rest };
    const leaseEndsAt = sending.at + PROMPT_LEASE_MS;
    if (sending.by === this.o.owner || this.now() >= leaseEndsAt) return { told: rest };
    return { told: { ...rest, pending: sending.id }, leaseEndsAt };
  }

  /** After the send: records the prompt as told (and drops the claim), re-reading on conflict. */
  private async confirm(key: string, session: Session, id: string): Promise<void> {
    const { namespace, name } = session.metadata as { namespace: string; name: string };
    try {
      await retryOnConflict(
        async (rereads) => (rereads === 0 ? session : await this.o.writer.get(namespace, name)),
        (current) => {
          const stored = current && readDelivered(current);
          if (!current || stored?.sending?.id !== id) return done(undefined);
          const { sending: _sent, ...told } = stored;
          const delivered = writeDelivered({ ...told, pending: id, n: stored.n + 1 });
          return {
            resourceVersion: current.metadata.resourceVersion,
            annotations: { [ANNOTATION_DELIVERED]: delivered },
          };
        },
        async (metadata) => {
          this.written.set(key, await this.o.writer.patch(namespace, name, { metadata }));
        },
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
    } finally {
      this.sentPrompts.delete(key);
    }
  }
}
