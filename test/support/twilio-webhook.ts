// Builds webhook requests exactly as Twilio signs them (the SDK's own getExpectedTwilioSignature).
import { randomBytes } from 'node:crypto';
import twilio from 'twilio';

export const messageSid = () => `SM${randomBytes(16).toString('hex')}`;
/** A media message's sid (Twilio gives media messages MM…). */
export const mediaMessageSid = () => `MM${randomBytes(16).toString('hex')}`;

/** WhatsApp's MessageType for a message whose first media has this type. */
const mediaKind = (type = '') => ['image', 'audio', 'video'].find((k) => type.startsWith(`${k}/`)) ?? 'document';

export interface SignedWebhook {
  body: string;
  headers: Record<string, string>;
  params: Record<string, string>;
}

/**
 * The form body and headers of a WhatsApp message webhook from `from` (E.164), signed for `url`.
 * `media`: the NumMedia/MediaUrl{N}/MediaContentType{N} fields (FakeTwilio.inboundMedia makes them).
 */
export function signedWebhook(
  authToken: string,
  url: string,
  fields: {
    from: string;
    body: string;
    sid?: string;
    media?: Record<string, string>;
    extra?: Record<string, string>;
  },
): SignedWebhook {
  const params: Record<string, string> = {
    SmsMessageSid: fields.sid ?? messageSid(),
    NumMedia: '0',
    ProfileName: 'Tester',
    MessageType: 'text',
    SmsSid: '',
    WaId: fields.from.slice(1),
    SmsStatus: 'received',
    Body: fields.body,
    To: 'whatsapp:+14155238886',
    NumSegments: '1',
    ReferralNumMedia: '0',
    MessageSid: fields.sid ?? '',
    AccountSid: `AC${'0'.repeat(32)}`,
    From: `whatsapp:${fields.from}`,
    ApiVersion: '2010-04-01',
    ...(fields.media && fields.media.NumMedia !== '0'
      ? { MessageType: mediaKind(fields.media.MediaContentType0), ...fields.media }
      : {}),
    ...fields.extra,
  };
  params.MessageSid = params.MessageSid || params.SmsMessageSid!;
  params.SmsSid = params.MessageSid;
  params.SmsMessageSid = params.MessageSid;
  return {
    params,
    body: new URLSearchParams(params).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilio.getExpectedTwilioSignature(authToken, url, params),
    },
  };
}

/** POSTs a signed webhook to the relay at `target` (may differ from the signed public URL, as behind a proxy). */
export async function postWebhook(target: string, hook: SignedWebhook): Promise<Response> {
  return fetch(target, { method: 'POST', headers: hook.headers, body: hook.body });
}

/**
 * A tap on a quick-reply button, as Twilio posts it: the title as Body and ButtonText, the
 * button's id as ButtonPayload, MessageType "button", and the message it was on.
 */
export function tapWebhook(
  authToken: string,
  url: string,
  tap: { from: string; title: string; payload: string; repliedTo: string; sid?: string },
): SignedWebhook {
  return signedWebhook(authToken, url, {
    from: tap.from,
    body: tap.title,
    sid: tap.sid,
    extra: {
      MessageType: 'button',
      ButtonText: tap.title,
      ButtonPayload: tap.payload,
      OriginalRepliedMessageSid: tap.repliedTo,
      OriginalRepliedMessageSender: 'whatsapp:+14155238886',
    },
  });
}
