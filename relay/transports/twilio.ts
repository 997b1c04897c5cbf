// WhatsApp through the official Twilio SDK. TWILIO_API_URL re-targets every request (tests: a local fake).
import twilio from 'twilio';
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
}

export function createTwilioTransport(options: TwilioTransportOptions): Transport {
  const client = twilio(options.accountSid, options.authToken, {
    autoRetry: false,
    ...(options.apiUrl ? { httpClient: new RebasedRequestClient(options.apiUrl) } : {}),
  });
  return {
    name: 'twilio',
    hasWindow: true,
    async send(message: OutgoingMessage) {
      const params = {
        from: options.from,
        to: `whatsapp:${message.to}`,
        ...(message.template
          ? { contentSid: message.template.contentSid, contentVariables: JSON.stringify(message.template.variables) }
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
