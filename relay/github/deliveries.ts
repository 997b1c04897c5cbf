// Between the GitHub webhook's acknowledgement and acting on it, as the inbound intake does for
// Twilio: a delivery id seen before is acknowledged on its first copy's record; a new delivery is
// written to its own journal (the inbound Journal class, in a folder of its own) before the 2xx;
// then its events are acted on in the background, each pull request's in order, and the delivery
// is marked done. At start-up, deliveries a previous run journaled and did not finish are acted on.
import type { Logger } from 'pino';
import { backoffDelay } from '../../common/kube/work-queue.ts';
import type { Journal } from '../inbound/journal.ts';
import { RECENT_IDS } from '../inbound/once.ts';
import type { RelayMetrics } from '../metrics.ts';
import { PhoneLanes } from '../phone-lane.ts';
import type { PullEvent } from '../pulls/types.ts';
import type { PullNotifier } from './notify.ts';

/** One signed delivery as journaled: its id, its event name, and the events it carries. */
export interface GithubDelivery {
  id: string;
  event: string;
  events: PullEvent[];
}

export type DeliveryReceipt = 'recorded' | 'duplicate' | 'shed';

export interface DeliveriesOptions {
  journal: Journal<GithubDelivery>;
  notifier: Pick<PullNotifier, 'notify'>;
  /** deliveries journaled and not yet acted on beyond which new ones are refused (GitHub shows them failed) */
  maxBacklog: number;
  metrics: RelayMetrics;
  logger: Logger;
  /** how long an event whose records or send failed is tried again (default a minute; then at the next start) */
  retryForMs?: number;
}

const RETRY = { baseMs: 250, maxMs: 5_000 };

export class GithubDeliveries {
  private readonly o: DeliveriesOptions;
  /** delivery id → its journal record, the last RECENT_IDS received */
  private readonly received = new Map<string, Promise<void>>();
  /** one lane per pull request: its events are acted on in the order they came */
  private readonly pulls = new PhoneLanes();
  private readonly working = new Set<Promise<void>>();

  constructor(options: DeliveriesOptions) {
    this.o = options;
  }

  /** Resolves once the delivery is journaled (acknowledge then), or is a copy of one that is. */
  async receive(delivery: GithubDelivery): Promise<DeliveryReceipt> {
    const copy = this.received.get(delivery.id);
    if (copy) {
      await copy;
      return 'duplicate';
    }
    if (this.o.journal.depth >= this.o.maxBacklog) return 'shed';
    const written = this.o.journal.record(delivery);
    this.remember(delivery.id, written);
    try {
      await written;
    } catch (error) {
      this.received.delete(delivery.id);
      throw error;
    }
    this.work(delivery, false);
    return 'recorded';
  }

  /** Acts on what an earlier run journaled and did not finish, in the order it was journaled. */
  replay(): number {
    const records = this.o.journal.records();
    for (const { message } of records) {
      this.remember(message.id, Promise.resolve());
      this.work(message, true);
    }
    if (records.length) this.o.logger.info({ deliveries: records.length }, 'replaying GitHub deliveries');
    return records.length;
  }

  /** Resolves when every delivery received so far has been acted on. */
  async idle(): Promise<void> {
    while (this.working.size) await Promise.allSettled([...this.working]);
  }

  private remember(id: string, recorded: Promise<void>): void {
    this.received.set(id, recorded);
    if (this.received.size > RECENT_IDS) this.received.delete(this.received.keys().next().value!);
  }

  private work(delivery: GithubDelivery, replay: boolean): void {
    const acted = delivery.events.map((event) =>
      this.pulls.run(`${event.owner}/${event.repo}#${event.number}`, () => this.retrying(event, replay)),
    );
    const job = Promise.all(acted)
      .then(
        () =>
          this.o.journal
            .done(delivery.id)
            .catch((error: unknown) =>
              this.o.logger.error(
                { err: error },
                'GitHub journal write failed; the delivery is replayed at the next start',
              ),
            ),
        (error: unknown) =>
          this.o.logger.error(
            { err: error, delivery: delivery.id, event: delivery.event },
            'could not act on a GitHub delivery; it is acted on again at the next start',
          ),
      )
      .finally(() => {
        this.o.metrics.githubBacklog.set(this.o.journal.depth);
        this.working.delete(job);
      });
    this.working.add(job);
    this.o.metrics.githubBacklog.set(this.o.journal.depth);
  }

  /**
   * Acts on the event until it succeeds or the retry window has passed. A later try sends a notice
   * an earlier try of this process recorded and did not send (notify.ts, `Attempt`).
   */
  private async retrying(event: PullEvent, replay: boolean): Promise<void> {
    const giveUpAt = Date.now() + (this.o.retryForMs ?? 60_000);
    for (let failures = 0; ; failures++) {
      try {
        await this.o.notifier.notify(event, replay ? 'restart' : failures > 0 ? 'retry' : 'first');
        return;
      } catch (error) {
        if (Date.now() >= giveUpAt) throw error;
        this.o.logger.warn({ err: error, failures, key: event.key }, 'GitHub event: acting on it failed; retrying');
        const wait = Math.min(backoffDelay(failures, RETRY.baseMs, RETRY.maxMs), Math.max(0, giveUpAt - Date.now()));
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }
}
