// Between the HTTP acknowledgement and acting on a message: record it in the journal (the only
// work on the acknowledgement path), refuse it when the backlog is too deep, act on it in the
// background, and mark it done. Background work starts only while the event loop has room, so
// acknowledgements are never queued behind it. At start-up, what a previous run recorded and did
// not finish is acted on first; close() waits for everything recorded.
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { RelayMetrics } from '../metrics.ts';
import type { InboundHandler } from './handler.ts';
import type { Journal } from './journal.ts';
import type { InboundMessage, Receipt } from './message.ts';
import type { Route } from './router.ts';

/** Above this share of the last sampling window spent running code, no new message is started. */
const BUSY_LOOP = 0.6;
const SAMPLE_MS = 20;

export interface IntakeOptions {
  journal: Journal;
  /** the later stages, and the de-duplication rule (handler.once) that remembers the ids received */
  handler: Pick<InboundHandler, 'accept' | 'once'>;
  /** messages recorded and not yet acted on beyond which new ones are refused */
  maxBacklog: number;
  metrics: RelayMetrics;
  logger: Logger;
}

export class Intake {
  private readonly o: IntakeOptions;
  /** journal writes under way */
  private readonly recording = new Set<Promise<void>>();
  private readonly working = new Set<Promise<void>>();
  private readonly queued: Array<{ message: InboundMessage; route?: Route }> = [];
  private sample: { at: EventLoopUtilization; busy: boolean } = { at: performance.eventLoopUtilization(), busy: false };
  private pumpTimer: NodeJS.Timeout | undefined;

  constructor(options: IntakeOptions) {
    this.o = options;
  }

  /**
   * The first two stages, on the acknowledgement path: receive (a copy of a message this replica
   * has is acknowledged on the first's record: once.ts) and record (the journal). Resolves once the
   * message is durably recorded (acknowledge then), or 'shed' when too busy. The other stages
   * (route → claim → act → reply: handler.ts) run in the background.
   */
  async receive(message: InboundMessage): Promise<Receipt> {
    const copy = this.o.handler.once.receivedBefore(message.id);
    if (copy) {
      this.o.metrics.duplicates.inc();
      await copy;
      return 'recorded';
    }
    if (this.o.journal.depth >= this.o.maxBacklog) return 'shed';
    const written = this.o.journal.record(message);
    this.o.handler.once.receive(message.id, written);
    this.recording.add(written);
    this.o.metrics.inboundBacklog.set(this.o.journal.depth);
    try {
      await written;
    } catch (error) {
      this.o.handler.once.forget(message.id);
      throw error;
    } finally {
      this.recording.delete(written);
    }
    this.work(message);
    return 'recorded';
  }

  /** Acts on what an earlier run recorded and did not finish, in the order it was recorded. */
  replay(): number {
    const records = this.o.journal.records();
    for (const { message, route } of records) {
      this.o.handler.once.receive(message.id, Promise.resolve());
      this.work(message, route);
    }
    if (records.length)
      this.o.logger.info({ messages: records.length }, 'replaying inbound messages recorded before a restart');
    return records.length;
  }

  /** Resolves when every message being recorded or recorded so far has been acted on. */
  async idle(): Promise<void> {
    while (this.working.size || this.recording.size || this.queued.length) {
      await Promise.allSettled([...this.working, ...this.recording, new Promise((r) => setTimeout(r, SAMPLE_MS))]);
    }
  }

  private work(message: InboundMessage, route?: Route): void {
    this.queued.push({ message, route });
    this.pump();
  }

  /**
   * Starts queued messages while the event loop is not busy; otherwise looks again shortly, and
   * then starts at least one, so a loop kept busy by acknowledgements still makes progress.
   */
  private pump(tick = false): void {
    const first = tick ? this.queued.shift() : undefined;
    if (first) this.start(first.message, first.route);
    while (this.queued.length && !this.loopBusy()) {
      const next = this.queued.shift()!;
      this.start(next.message, next.route);
    }
    if (this.queued.length && !this.pumpTimer) {
      this.pumpTimer = setTimeout(() => {
        this.pumpTimer = undefined;
        this.pump(true);
      }, SAMPLE_MS);
    }
  }

  /** Event-loop utilisation over the last window of at least SAMPLE_MS, sampled at most that often. */
  private loopBusy(): boolean {
    const window = performance.eventLoopUtilization(this.sample.at);
    if (window.idle + window.active >= SAMPLE_MS)
      this.sample = { at: performance.eventLoopUtilization(), busy: window.utilization > BUSY_LOOP };
    return this.sample.busy;
  }

  private start(message: InboundMessage, route?: Route): void {
    const job = this.o.handler
      .accept(message, route)
      .then(
        () =>
          this.o.journal
            .done(message.id)
            .catch((error: unknown) =>
              this.o.logger.error(
                { err: error },
                'inbound journal write failed; the message is replayed at the next start',
              ),
            ),
        (error: unknown) =>
          this.o.logger.error(
            { err: error, id: message.id },
            'could not act on an inbound message nor tell the phone; it is replayed at the next start',
          ),
      )
      .finally(() => {
        this.o.metrics.inboundBacklog.set(this.o.journal.depth);
        this.working.delete(job);
      });
    this.working.add(job);
  }
}
