// One-tap answers: every quick reply of a request carries a payload naming that request
// ("<reply>:<requestId>"), so a tap can answer only the request whose message it was on. Pure.
import { cutShown } from './shown.ts';

/** An answer offered with a request: a button where the transport shows them, else typed words. */
export interface QuickReply {
  label: string;
  reply: string;
  /** names the request this reply answers ("<reply>:<requestId>"): what a tap sends back */
  payload?: string;
}

/** WhatsApp shows at most this many quick-reply buttons in a session message. */
export const MAX_BUTTONS = 3;
/** A button's title: WhatsApp cuts longer ones. */
export const TITLE_CHARS = 20;
/** A quick reply's body: Twilio's limit for twilio/quick-reply (longer text goes in messages before it). */
export const BUTTON_BODY_CHARS = 1024;
/** What a payload may hold (Twilio allows 200 characters for an action id). */
export const PAYLOAD_CHARS = 200;

const REPLY = /^[a-z0-9]+(?: [a-z0-9]+)?$/;
const REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const REPLY_CHARS = 24;

export interface Tap {
  /** the words the button stands for, as if typed ("allow always", "2") */
  reply: string;
  requestId: string;
}

export const encodePayload = (reply: string, requestId: string) => `${reply}:${requestId}`;

/** A payload as this relay writes it, or undefined for anything else (checked strictly: it comes from the network). */
export function parsePayload(payload: unknown): Tap | undefined {
  if (typeof payload !== 'string' || payload.length > PAYLOAD_CHARS) return undefined;
  const at = payload.indexOf(':');
  if (at < 1) return undefined;
  const reply = payload.slice(0, at);
  const requestId = payload.slice(at + 1);
  if (reply.length > REPLY_CHARS || !REPLY.test(reply) || !REQUEST_ID.test(requestId)) return undefined;
  return { reply, requestId };
}

/** The request's quick replies, each carrying its payload. Replies a payload cannot carry stay unbound (typed only). */
export function bindReplies(requestId: string, replies: QuickReply[]): QuickReply[] {
  return replies.map((r) => {
    const payload = encodePayload(r.reply, requestId);
    return parsePayload(payload) ? { ...r, payload } : r;
  });
}

/** A title WhatsApp shows whole: at most TITLE_CHARS, cut with an ellipsis. */
export const buttonTitle = (label: string) =>
  label.length <= TITLE_CHARS ? label : `${cutShown(label, TITLE_CHARS - 1).text.trimEnd()}…`;

/**
 * How a request's replies reach a phone: as quick-reply buttons when all of them fit
 * (≤ MAX_BUTTONS, each bound to the request), otherwise as the numbered text alone — a list
 * picker would hide the options (and their descriptions) behind one more tap and cut them at 24
 * characters, while the text already lists them and a typed number answers.
 */
export function buttonsFor(replies: QuickReply[] | undefined): Array<{ title: string; id: string }> | undefined {
  if (!replies?.length || replies.length > MAX_BUTTONS || replies.some((r) => !r.payload)) return undefined;
  return replies.map((r) => ({ title: buttonTitle(r.label), id: r.payload! }));
}
