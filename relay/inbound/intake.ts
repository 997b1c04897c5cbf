// Between the HTTP acknowledgement and acting on a message: record it in the journal (the only
// work on the acknowledgement path), refuse it when the backlog is too deep, act on it in the
// background, and mark it done. At start-up, what a previous run recorded and did not finish is
// acted on first; close() waits for everything recorded.
import type { Logger } from 'pino';
import type { RelayMetrics } from '../metrics.ts';
import type { InboundHandler, InboundMessage } from './handler.ts';
import type { Journal } from './journal.ts';

export type Receipt = 'recorded' | 'shed';

export interface IntakeOptions {
  journal: Journal;
  handler: Pick<InboundHandler, 'accept'>;
  /** messages recorded and not yet acted on beyond which new ones are refused */
  maxBacklog: number;
  metrics: RelayMetrics;
  logger: Logger;
}

export class Intake {
  private readonly o: IntakeOptions;
  /** message id → its journal write, so copies arriving together share one record */
  private readonly recording = new Map<string, Promise<void>>();
  private readonly working = new Set<Promise<void>>();

  constructor(options: IntakeOptions) {
    this.o = options;
  }

  /** Resolves once the message is durably recorded (acknowledge then), or 'shed' when too busy. */
  async receive(message: InboundMessage): Promise<Receipt> {
    const copy = this.recording.get(message.id);
    if (copy) {
      this.o.metrics.duplicates.inc();
      await copy;
      return 'recorded';
    }
    if (this.o.journal.depth >= this.o.maxBacklog) return 'shed';
    const written = this.o.journal.record(message);
    this.recording.set(message.id, written);
    this.o.metrics.inboundBacklog.set(this.o.journal.depth);
    try {
      await written;
    } catch (error) {
      this.recording.delete(message.id);
      throw error;
    }
    this.work(message);
    return 'recorded';
  }

  /** Acts on what an earlier run recorded and did not finish, in the order it was recorded. */
  replay(): number {
    const records = this.o.journal.records();
    for (const { message, route } of records) {
      this.recording.set(message.id, Promise.resolve());
      this.work(message, route);
    }
    if (records.length) this.o.logger.info({ messages: records.length }, 'replaying inbound messages recorded before a restart');
    return records.length;
  }

  /** Resolves when every message being recorded or recorded so far has been acted on. */
  async idle(): Promise<void> {
    while (this.working.size || this.recording.size) await Promise.allSettled([...this.working, ...this.recording.values()]);
  }

  private work(message: InboundMessage, route?: Parameters<InboundHandler['accept']>[1]): void {
    const job = this.o.handler.accept(message, route)
      .then(() => this.o.journal.done(message.id))
      .catch((error: unknown) => this.o.logger.error({ err: error }, 'inbound journal write failed; the message is replayed at the next start'))
      .finally(() => {
        this.o.metrics.inboundBacklog.set(this.o.journal.depth);
        this.recording.delete(message.id);
        this.working.delete(job);
      });
    this.working.add(job);
  }
}
