// Sending: a per-sender rate limit, splitting, one media item per message, the 24-hour window,
// and no retry of a failed send. Callers keep a phone's order by sending from its lane (phone-lane.ts).
import type { Logger } from 'pino';
import type { PhoneHash } from '../../common/session/phone-hash.ts';
import type { RelayMetrics } from '../metrics.ts';
import { RateLimiter } from '../rate-limit.ts';
import { SendError, type OutgoingMessage, type Transport } from '../transports/transport.ts';
import type { Part } from './owed.ts';
import { BUTTON_BODY_CHARS, buttonsFor } from '../chat/buttons.ts';
import { MESSAGE_LIMIT, splitMessage, splitRequest } from './split.ts';
import { cutShown } from '../chat/shown.ts';

export interface OutboxOptions {
  transportFor(phone: string): Transport;
  /** a signed link to relay media; the web chat gets a same-origin path */
  mediaUrl(ref: string, transport: Transport): string;
  /** when the phone last wrote to us, if known (restart-safe source: its Sessions) */
  lastInboundAt(phone: string): number | undefined;
  templateSid?: string;
  windowMs: number;
  ratePerSecond: number;
  metrics: RelayMetrics;
  logger: Logger;
  /** the install's keyed phone hash, for log lines */
  phoneHash: PhoneHash;
  /** the clock (tests set it); Date.now by default */
  now?: () => number;
}

export class Outbox {
  private readonly options: OutboxOptions;
  /** the sender's pace: one message every 1/ratePerSecond s, each waiting its turn */
  private readonly pace: RateLimiter;
  private depth = 0;
  private readonly now: () => number;

  constructor(options: OutboxOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.pace = new RateLimiter({ count: options.ratePerSecond, periodMs: 1000, burst: 1, now: this.now });
  }

  /** Outbound messages accepted by deliver() and not yet sent (or failed). */
  get queueDepth(): number {
    return this.depth;
  }

  /** Sends the parts in order. Call from the phone's lane to keep its order. */
  async deliver(phone: string, parts: Part[]): Promise<void> {
    const transport = this.options.transportFor(phone);
    const messages =
      transport.hasWindow && this.windowClosed(phone)
        ? await this.template(transport, phone, parts)
        : this.split(transport, phone, parts);
    let waiting = messages.length;
    this.setDepth(waiting);
    try {
      for (const message of messages) {
        await this.sendOnce(transport, message);
        waiting--;
        this.setDepth(-1);
      }
    } finally {
      this.setDepth(-waiting);
    }
  }

  private split(transport: Transport, phone: string, parts: Part[]): OutgoingMessage[] {
    const messages: OutgoingMessage[] = [];
    for (const part of parts) {
      const lastLimit = buttonsFor(part.actions) ? BUTTON_BODY_CHARS : MESSAGE_LIMIT;
      const chunks = !part.text ? [''] : part.actions ? splitRequest(part.text, lastLimit) : splitMessage(part.text);
      chunks.forEach((body, i) =>
        messages.push({
          to: phone,
          ...(body ? { body } : {}),
          ...(part.media && i === 0 ? { mediaUrl: this.options.mediaUrl(part.media.ref, transport) } : {}),
          ...(part.actions && i === chunks.length - 1 ? { actions: part.actions } : {}),
        }),
      );
    }
    return messages;
  }

  private windowClosed(phone: string): boolean {
    const last = this.options.lastInboundAt(phone);
    return last !== undefined && this.now() - last > this.options.windowMs;
  }

  /**
   * Outside the 24-hour window only a template may be sent: one, previewing the parts — with the
   * request's buttons when it has fixed titles and the transport has an approved template for them.
   */
  private async template(transport: Transport, phone: string, parts: Part[]): Promise<OutgoingMessage[]> {
    const preview = cutShown(
      parts
        .map((p) => p.text ?? '')
        .join(' ')
        .replace(/\s+/g, ' '),
      200,
    ).text;
    const replies = parts.findLast((p) => p.actions)?.actions;
    const buttons = replies?.every((r) => r.label === r.reply) ? buttonsFor(replies) : undefined;
    const decision = buttons && (await transport.decisionTemplate?.(buttons.map((b) => b.title)));
    if (decision) {
      const ids = Object.fromEntries(buttons!.map((b, i) => [String(i + 2), b.id]));
      return [{ to: phone, template: { contentSid: decision, variables: { 1: preview, ...ids } } }];
    }
    if (!this.options.templateSid) {
      this.options.metrics.messagesSent.inc({ result: 'window_closed' });
      this.options.logger.warn(
        { phoneHash: this.options.phoneHash(phone), parts: parts.length },
        'outside the 24-hour window and no TWILIO_TEMPLATE_SID: messages not sent',
      );
      return [];
    }
    return [{ to: phone, template: { contentSid: this.options.templateSid, variables: { 1: preview } } }];
  }

  private async waitForSlot(): Promise<void> {
    const waitMs = this.pace.reserve();
    if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
  }

  /** One attempt. A failure is counted and logged, never retried: Twilio may have sent it anyway. */
  private async sendOnce(transport: Transport, message: OutgoingMessage): Promise<void> {
    await this.waitForSlot();
    const stop = this.options.metrics.sendDuration.startTimer();
    try {
      await transport.send(message);
      this.options.metrics.messagesSent.inc({ result: message.template ? 'template' : 'sent' });
    } catch (error) {
      if (!(error instanceof SendError)) throw error;
      // 63016: outside WhatsApp's 24-hour window (our record of the last inbound message was off)
      this.options.metrics.messagesSent.inc({ result: error.code === 63016 ? 'window_closed' : 'failed' });
      this.options.logger.error(
        { phoneHash: this.options.phoneHash(message.to), status: error.status, code: error.code, err: error },
        'send failed; not retried (a send is not idempotent)',
      );
    } finally {
      stop();
    }
  }

  private setDepth(delta: number): void {
    this.depth += delta;
    this.options.metrics.outboundQueueDepth.set(this.depth);
  }
}
