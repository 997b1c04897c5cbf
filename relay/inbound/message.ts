// One inbound message as the transports hand it to the pipeline, and what its acknowledgement says.
// Every stage imports these from here, below all of them, so no stage imports another for its types.
import type { InboundMedia } from './media-fields.ts';

export interface InboundMessage {
  /** MessageSid (Twilio) or a client-made id (web chat) */
  id: string;
  /** E.164, without the whatsapp: prefix */
  from: string;
  body: string;
  /** a tapped button's payload (Twilio ButtonPayload; the web chat's buttons): answers only the request it names */
  payload?: string;
  transport: 'twilio' | 'web';
  /** When the relay received it (ISO, milliseconds): orders a phone's commands. */
  receivedAt?: string;
  /** attachments the webhook announced (journaled with the message, fetched when acted on) */
  media?: InboundMedia[];
}

/** `recorded`: in the journal (acknowledge it); `shed`: the backlog is full, nothing was recorded. */
export type Receipt = 'recorded' | 'shed';
