// The web chat transport: messages to the local user go to an in-memory history and to every
// open page (server-sent events). Used by the local stack and the browser test.
// The chat token opens the page once; the browser then holds a cookie derived from it.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { QuickReply } from '../chat/buttons.ts';
import type { OutgoingMessage, Transport } from './transport.ts';

export interface ChatEntry {
  id: number;
  from: 'me' | 'bot';
  text?: string;
  mediaUrl?: string;
  actions?: QuickReply[];
  at: string;
}

const HISTORY = 200;

const sameSecret = (given: unknown, expected: Buffer) => {
  if (typeof given !== 'string') return false;
  const bytes = Buffer.from(given);
  return bytes.length === expected.length && timingSafeEqual(bytes, expected);
};

export class WebChat implements Transport {
  readonly name = 'web' as const;
  readonly hasWindow = false;
  readonly phone: string;
  private readonly token: Buffer;
  /** HMAC of the token: what the browser's cookie holds, so the token itself is never stored there. */
  readonly cookieValue: string;
  private readonly history: ChatEntry[] = [];
  private readonly listeners = new Set<(entry: ChatEntry) => void>();
  private nextId = 1;
  private readonly now: () => number;

  /** now: the clock (tests set it); Date.now by default */
  constructor(options: { phone: string; token: string; now?: () => number }) {
    this.phone = options.phone;
    this.now = options.now ?? Date.now;
    this.token = Buffer.from(options.token);
    this.cookieValue = createHmac('sha256', options.token).update('tether web chat cookie').digest('base64url');
  }

  /** The token from the chat link. */
  authorized(token: unknown): boolean {
    return sameSecret(token, this.token);
  }

  /** The cookie the page was given in exchange for the token. */
  authorizedCookie(value: unknown): boolean {
    return sameSecret(value, Buffer.from(this.cookieValue));
  }

  async send(message: OutgoingMessage): Promise<{ id: string }> {
    const entry = this.add({
      from: 'bot',
      text: message.body ?? message.template?.variables[1],
      mediaUrl: message.mediaUrl,
      actions: message.actions,
    });
    return { id: `web-${entry.id}` };
  }

  recordInbound(text: string): void {
    this.add({ from: 'me', text });
  }

  entries(): ChatEntry[] {
    return [...this.history];
  }

  subscribe(listener: (entry: ChatEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private add(fields: Omit<ChatEntry, 'id' | 'at'>): ChatEntry {
    const entry: ChatEntry = { id: this.nextId++, at: new Date(this.now()).toISOString(), ...fields };
    this.history.push(entry);
    if (this.history.length > HISTORY) this.history.shift();
    for (const listener of this.listeners) listener(entry);
    return entry;
  }
}
