// Is this POST /webhook really Twilio, about a message from an allowed number?
import twilio from 'twilio';
import { PAYLOAD_CHARS } from '../chat/buttons.ts';
import { text } from '../text.ts';
import type { InboundMessage } from './message.ts';
import { parseMediaFields, type MediaSource } from './media-fields.ts';

export const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';
/** The answer when the backlog is too deep: Twilio sends the text back to the sender; nothing is recorded. */
export const BUSY_TWIML =
  '<?xml version="1.0" encoding="UTF-8"?>' + `<Response><Message>${text.busy()}</Message></Response>`;

export interface WebhookInput {
  signature: string | undefined;
  /** the query string of the request as received, with its "?" (usually empty) */
  search: string;
  params: Record<string, unknown>;
}

export interface WebhookSettings {
  authToken: string;
  /** exactly the URL configured at Twilio: PUBLIC_URL/webhook (never rebuilt from proxy headers) */
  webhookUrl: string;
  allowedNumbers: Set<string>;
  /** where this account's media URLs live; absent → a webhook with media is refused */
  media?: MediaSource;
}

export type WebhookVerdict =
  | { kind: 'rejected'; status: 400 | 403; reason: string }
  | { kind: 'ignored'; reason: string }
  | { kind: 'accepted'; message: InboundMessage };

/** Longer payloads are none of ours: kept only this far (the journal stays small), then refused when routed. */
const MAX_PAYLOAD_KEPT = PAYLOAD_CHARS + 1;
const SID = /^(SM|MM)[0-9a-f]{32}$/;
const FROM = /^whatsapp:(\+[1-9][0-9]{6,14})$/;

export function checkWebhook(input: WebhookInput, settings: WebhookSettings): WebhookVerdict {
  if (!input.signature) return { kind: 'rejected', status: 403, reason: 'missing X-Twilio-Signature' };
  const url = `${settings.webhookUrl}${input.search}`;
  if (!twilio.validateRequest(settings.authToken, input.signature, url, input.params)) {
    return { kind: 'rejected', status: 403, reason: 'bad X-Twilio-Signature' };
  }
  const { MessageSid: sid, From: from, Body: body, ButtonPayload: payload } = input.params;
  if (typeof sid !== 'string' || !SID.test(sid))
    return { kind: 'rejected', status: 400, reason: 'missing or malformed MessageSid' };
  if (typeof from !== 'string') return { kind: 'rejected', status: 400, reason: 'missing From' };
  if (body !== undefined && typeof body !== 'string')
    return { kind: 'rejected', status: 400, reason: 'malformed Body' };
  if (payload !== undefined && typeof payload !== 'string')
    return { kind: 'rejected', status: 400, reason: 'malformed ButtonPayload' };
  const phone = FROM.exec(from)?.[1];
  if (!phone) return { kind: 'ignored', reason: 'sender is not a WhatsApp number' };
  if (!settings.allowedNumbers.has(phone)) return { kind: 'ignored', reason: 'sender not in ALLOWED_NUMBERS' };
  const media = parseMediaFields(input.params, sid, settings.media);
  if (!media.ok) return { kind: 'rejected', status: 400, reason: media.reason };
  // A tapped quick reply: Body is the button's title, ButtonPayload the id the relay gave it (checked when routed).
  const tapped = payload ? { payload: payload.slice(0, MAX_PAYLOAD_KEPT) } : {};
  const message: InboundMessage = {
    id: sid,
    from: phone,
    body: body ?? '',
    ...tapped,
    transport: 'twilio',
    receivedAt: new Date().toISOString(),
  };
  return { kind: 'accepted', message: media.media.length ? { ...message, media: media.media } : message };
}
