// The one interface every way of reaching a phone implements.
import type { QuickReply } from '../chat/buttons.ts';

export interface OutgoingMessage {
  /** E.164 number of the user */
  to: string;
  body?: string;
  mediaUrl?: string;
  /** quick replies a richer client may show as buttons (the web chat); WhatsApp shows the text */
  actions?: QuickReply[];
  /** a pre-approved template, used outside WhatsApp's 24-hour window */
  template?: { contentSid: string; variables: Record<string, string> };
}

export interface Transport {
  readonly name: 'twilio' | 'web';
  /** Sends once. Never retried by the caller: a failed send may still have been delivered. */
  send(message: OutgoingMessage): Promise<{ id: string }>;
  /** Whether free-form text may be sent now (WhatsApp's 24-hour customer-care window). */
  readonly hasWindow: boolean;
  /**
   * An approved template with buttons of these fixed titles, for a request outside the window;
   * undefined while there is none (not approved yet, or not available).
   */
  decisionTemplate?(titles: string[]): Promise<string | undefined>;
}

export class SendError extends Error {
  readonly status: number | undefined;
  readonly code: number | undefined;
  constructor(message: string, status?: number, code?: number) {
    super(message);
    this.name = 'SendError';
    this.status = status;
    this.code = code;
  }
}
