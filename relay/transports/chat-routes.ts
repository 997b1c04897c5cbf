// The web chat's HTTP routes. The link's token is exchanged once for an HttpOnly, SameSite=Strict
// cookie (Secure when the public URL is https) and the browser is sent on to /chat without it;
// the page, its event stream and its posts then authenticate by that cookie alone.
import express, { type NextFunction, type Request, type Response } from 'express';
import { HttpError } from '../http-error.ts';
import type { InboundMessage, Receipt } from '../inbound/message.ts';
import { PAYLOAD_CHARS } from '../chat/buttons.ts';
import { CHAT_PAGE } from './chat-page.ts';
import type { WebChat } from './web.ts';

export const CHAT_COOKIE = 'tether_chat';

/** Headers on every chat response: no referrer leaves the page, no one frames it. */
const CHAT_HEADERS = {
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy':
    "default-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; " +
    "frame-ancestors 'none'; form-action 'self'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-store',
};

function cookieOf(req: Request, name: string): string | undefined {
  for (const part of (req.get('cookie') ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

export interface ChatRouteDeps {
  webChat?: WebChat;
  /** the relay's public URL: its scheme decides the cookie's Secure flag */
  publicUrl: string;
  /** records the message durably and acts on it in the background; 'shed' when the backlog is full */
  receive(message: InboundMessage): Promise<Receipt>;
  now: () => number;
}

export function chatRouter(deps: ChatRouteDeps): express.Router {
  const router = express.Router();
  const secure = deps.publicUrl.startsWith('https:');
  const chat = () => {
    if (!deps.webChat) throw new HttpError(404, 'web chat is not enabled');
    return deps.webChat;
  };
  const byCookie = (req: Request, res: Response, next: NextFunction) => {
    res.set(CHAT_HEADERS);
    if (!chat().authorizedCookie(cookieOf(req, CHAT_COOKIE)))
      throw new HttpError(401, 'open the chat link (with its token) again');
    next();
  };

  router.get(
    '/chat',
    (req, res, next) => {
      res.set(CHAT_HEADERS);
      if (req.query.token === undefined) return byCookie(req, res, next);
      if (!chat().authorized(req.query.token)) throw new HttpError(401, 'missing or wrong chat token');
      const flags = ['Path=/', 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : [])];
      res.set('Set-Cookie', `${CHAT_COOKIE}=${chat().cookieValue}; ${flags.join('; ')}`);
      res.redirect(303, 'chat'); // relative: the same path, without the query
    },
    (_req: Request, res: Response) => {
      res.type('html').send(CHAT_PAGE);
    },
  );

  router.get('/chat/events', byCookie, (req, res) => {
    const webChat = chat();
    res.set({ 'Content-Type': 'text/event-stream', Connection: 'keep-alive' }).flushHeaders();
    const write = (entry: unknown) => res.write(`data: ${JSON.stringify(entry)}\n\n`);
    webChat.entries().forEach(write);
    const unsubscribe = webChat.subscribe(write);
    const heartbeat = setInterval(() => res.write(': ping\n\n'), 15_000);
    req.on('close', () => (clearInterval(heartbeat), unsubscribe()));
  });

  router.post('/chat/send', byCookie, express.json({ limit: '16kb' }), async (req, res) => {
    const { id, text, payload } = (req.body ?? {}) as { id?: unknown; text?: unknown; payload?: unknown };
    if (
      typeof id !== 'string' ||
      !/^[A-Za-z0-9-]{8,64}$/.test(id) ||
      typeof text !== 'string' ||
      (payload !== undefined && typeof payload !== 'string')
    ) {
      throw new HttpError(400, 'expected {id, text, payload?}');
    }
    // A button's payload names the request it answers (checked when routed, like a WhatsApp tap).
    const tapped = payload === undefined ? {} : { payload: payload.slice(0, PAYLOAD_CHARS + 1) };
    const receipt = await deps.receive({
      id: `web-${id}`,
      from: chat().phone,
      body: text,
      ...tapped,
      transport: 'web',
      receivedAt: new Date(deps.now()).toISOString(),
    });
    if (receipt === 'shed') throw new HttpError(503, 'too many messages at once; send it again in a minute');
    chat().recordInbound(text);
    res.status(202).json({ accepted: true });
  });
  return router;
}
