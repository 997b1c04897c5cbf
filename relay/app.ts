// HTTP surface of the relay. Thin routes calling domain functions; one error handler.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Intake } from './inbound/intake.ts';
import { BUSY_TWIML, EMPTY_TWIML, checkWebhook, type WebhookSettings } from './inbound/webhook.ts';
import type { UploadAuthorizer } from './media/auth.ts';
import { checkMediaSignature } from './media/signing.ts';
import { MediaError, type MediaStore } from './media/store.ts';
import type { RelayMetrics } from './metrics.ts';
import { CHAT_PAGE } from './transports/chat-page.ts';
import type { WebChat } from './transports/web.ts';

export interface AppDeps {
  webhook?: WebhookSettings;
  /** records a message durably (the acknowledgement waits for it) and acts on it in the background */
  inbound: Pick<Intake, 'receive'>;
  media: MediaStore;
  mediaSigningKey: string;
  mediaMaxBytes: number;
  authorizer: UploadAuthorizer;
  webChat?: WebChat;
  metrics: RelayMetrics;
  logger: Logger;
  ready(): boolean;
}

export class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const bearer = (req: Request) => /^Bearer (.+)$/.exec(req.get('authorization') ?? '')?.[1] ?? '';
const refOf = (req: Request) => `${req.params.namespace}/${req.params.session}/${req.params.file}`;

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);

  app.post('/webhook', express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 100 }), async (req, res) => {
    const stop = deps.metrics.webhookDuration.startTimer();
    if (!deps.webhook) throw new HttpError(404, 'Twilio is not configured');
    const search = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
    const verdict = checkWebhook({ signature: req.get('x-twilio-signature'), search, params: req.body ?? {} }, deps.webhook);
    let outcome: string = verdict.kind;
    if (verdict.kind === 'rejected') {
      if (verdict.status === 403) deps.metrics.signatureFailures.inc();
      deps.logger.warn({ status: verdict.status, reason: verdict.reason, ip: req.socket.remoteAddress }, 'webhook rejected');
      res.status(verdict.status).type('text/plain').send(verdict.reason);
    } else if (verdict.kind === 'ignored') {
      deps.logger.info({ reason: verdict.reason }, 'webhook ignored');
      res.type('text/xml').send(EMPTY_TWIML);
    } else {
      const receipt = await deps.inbound.receive(verdict.message);
      if (receipt === 'shed') {
        outcome = 'shed';
        deps.logger.warn('inbound backlog full: webhook refused with a reply to send again');
      }
      res.type('text/xml').send(receipt === 'shed' ? BUSY_TWIML : EMPTY_TWIML);
    }
    deps.metrics.webhookRequests.inc({ outcome });
    stop();
  });

  app.put('/media/:namespace/:session/:file', express.raw({ type: () => true, limit: deps.mediaMaxBytes }), async (req, res) => {
    const ref = refOf(req);
    if (!(await deps.authorizer.mayUpload(bearer(req), String(req.params.namespace), String(req.params.session)))) {
      deps.metrics.mediaUploads.inc({ outcome: 'forbidden' });
      throw new HttpError(403, 'token does not belong to this session\'s runner');
    }
    await deps.media.put(ref, req.get('content-type')?.split(';')[0]?.trim(), Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
    deps.metrics.mediaUploads.inc({ outcome: 'stored' });
    res.status(201).json({ ref });
  });

  app.get('/media/:namespace/:session/:file', async (req, res) => {
    const ref = refOf(req);
    const check = checkMediaSignature(deps.mediaSigningKey, ref, req.query.exp, req.query.sig);
    if (check !== 'ok') throw new HttpError(check === 'expired' ? 410 : 403, check === 'expired' ? 'link expired' : 'bad signature');
    const { bytes, contentType } = await deps.media.get(ref);
    res.set({ 'Content-Type': contentType, 'Cache-Control': 'private, max-age=300', 'X-Content-Type-Options': 'nosniff' }).send(bytes);
  });

  const chatAuth = (req: Request, _res: Response, next: NextFunction) => {
    if (!deps.webChat) throw new HttpError(404, 'web chat is not enabled');
    if (!deps.webChat.authorized(req.query.token ?? bearer(req))) throw new HttpError(401, 'missing or wrong chat token');
    next();
  };

  app.get('/chat', chatAuth, (_req, res) => {
    res.set({ 'Content-Security-Policy': "default-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'" });
    res.type('html').send(CHAT_PAGE);
  });

  app.get('/chat/events', chatAuth, (req, res) => {
    const chat = deps.webChat!;
    res.set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' }).flushHeaders();
    const write = (entry: unknown) => res.write(`data: ${JSON.stringify(entry)}\n\n`);
    chat.entries().forEach(write);
    const unsubscribe = chat.subscribe(write);
    const heartbeat = setInterval(() => res.write(': ping\n\n'), 15_000);
    req.on('close', () => (clearInterval(heartbeat), unsubscribe()));
  });

  app.post('/chat/send', chatAuth, express.json({ limit: '16kb' }), async (req, res) => {
    const { id, text } = (req.body ?? {}) as { id?: unknown; text?: unknown };
    if (typeof id !== 'string' || !/^[A-Za-z0-9-]{8,64}$/.test(id) || typeof text !== 'string') throw new HttpError(400, 'expected {id, text}');
    const receipt = await deps.inbound.receive({ id: `web-${id}`, from: deps.webChat!.phone, body: text, transport: 'web', receivedAt: new Date().toISOString() });
    if (receipt === 'shed') throw new HttpError(503, 'too many messages at once; send it again in a minute');
    deps.webChat!.recordInbound(text);
    res.status(202).json({ accepted: true });
  });

  app.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  app.get('/healthz', (_req, res) => void res.json({ ok: true }));
  app.get('/readyz', (_req, res) => void res.status(deps.ready() ? 200 : 503).json({ ready: deps.ready() }));

  app.use((_req: Request, _res: Response) => {
    throw new HttpError(404, 'not found');
  });
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = error as { status?: number; statusCode?: number; type?: string; message?: string };
    const status = error instanceof HttpError || error instanceof MediaError ? error.status : e.status ?? e.statusCode ?? 500;
    if (status >= 500) deps.logger.error({ err: error, path: req.path }, 'request failed');
    else deps.logger.warn({ status, reason: e.message, path: req.path }, 'request refused');
    if (req.path === '/webhook') deps.metrics.webhookRequests.inc({ outcome: 'error' });
    res.status(status).type('text/plain').send(status >= 500 ? 'internal error' : e.message ?? 'bad request');
  });
  return app;
}
