// WhatsApp through the official Twilio SDK. TWILIO_API_URL re-targets every request (tests: a local fake).
import type { Logger } from 'pino';
import twilio from 'twilio';
import { buttonsFor } from '../chat/buttons.ts';
import { ContentTemplates, quickReplyVariables } from './twilio-content.ts';
import { SendError, type OutgoingMessage, type Transport } from './transport.ts';

import type RequestClient from 'twilio/lib/base/RequestClient.js';

/** Sends the SDK's requests to another origin, keeping path and query. No automatic retries. */
class RebasedRequestClient extends twilio.RequestClient {
  private readonly base: URL;
  constructor(baseUrl: string) {
    super({ autoRetry: false, timeout: 15_000, keepAlive: true });
    this.base = new URL(baseUrl);
  }

  override request<T>(opts: RequestClient.RequestOptions<T>) {
    const uri = new URL(opts.uri);
    const target = new URL(`${this.base.pathname.replace(/\/$/, '')}${uri.pathname}${uri.search}`, this.base);
    return super.request<T>({ ...opts, uri: target.href });
  }
}

export interface TwilioTransportOptions {
  accountSid: string;
  authToken: string;
  from: string;
  apiUrl?: string;
  /** quick replies as WhatsApp buttons (Content API); off: the text alone */
  buttons?: boolean;
  logger: Logger;
  /** the clock (tests set it); Date.now by default */
  now?: () => number;
}

export function createTwilioTransport(options: TwilioTransportOptions): Transport {
  const client = twilio(options.accountSid, options.authToken, {
    autoRetry: false,
    ...(options.apiUrl ? { httpClient: new RebasedRequestClient(options.apiUrl) } : {}),
  });
  // The SDK loads its Messages API (dozens of modules, ~45 ms on the event loop) on first use:
  // here, not in the first send.
  void client.messages;
  const templates = options.buttons === false ? undefined : new ContentTemplates(client, options.logger, options.now);
  /**
   * The message's buttons as a quick-reply template, or undefined (no buttons, or the Content API
   * failed: the text still goes).
   */
  const withButtons = async (message: OutgoingMessage) => {
    const buttons = templates && !message.mediaUrl && message.body ? buttonsFor(message.actions) : undefined;
    if (!buttons) return undefined;
    try {
      return {
        contentSid: await templates!.quickReply(buttons.length),
        variables: quickReplyVariables(message.body!, buttons),
      };
    } catch (error) {
      options.logger.error({ err: error }, 'content template unavailable; sending the text without buttons');
      return undefined;
    }
  };
  return {
    name: 'twilio',
    hasWindow: true,
    async decisionTemplate(titles) {
      try {
        return await templates?.decision(titles);
      } catch (error) {
        options.logger.error({ err: error }, 'decision template unavailable; the plain template goes instead');
        return undefined;
      }
    },
    async send(message: OutgoingMessage) {
      const template = message.template ?? (await withButtons(message));
      const params = {
        from: options.from,
        to: `whatsapp:${message.to}`,
        ...(template
          ? { contentSid: template.contentSid, contentVariables: JSON.stringify(template.variables) }
          : { body: message.body ?? '', ...(message.mediaUrl ? { mediaUrl: [message.mediaUrl] } : {}) }),
      };
      try {
        const sent = await client.messages.create(params);
        return { id: sent.sid };
      } catch (error) {
        const e = error as { status?: number; code?: number; message?: string };
        throw new SendError(`Twilio send failed: ${e.message ?? 'unknown error'}`, e.status, e.code);
      }
    },
  };
}
