// HTTP surface of the relay. Thin routes calling domain functions; one error handler.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Intake } from './inbound/intake.ts';
import { HttpError } from './http-error.ts';
import { BUSY_TWIML, EMPTY_TWIML, checkWebhook, type WebhookSettings } from './inbound/webhook.ts';
import { RELAY_UPLOAD_PATH } from '../common/session/names.ts';
import type { UploadLimits } from './config.ts';
import type { UploadAuthorizer } from './media/auth.ts';
import { checkMediaSignature } from './media/signing.ts';
import type { MediaStore } from './media/store.ts';
import { uploadHandler } from './media/upload.ts';
import { downloadHandler } from './media/download.ts';
import type { RelayMetrics } from './metrics.ts';
import { chatRouter } from './transports/chat-routes.ts';
import type { WebChat } from './transports/web.ts';
import { GITHUB_BODY_LIMIT, githubWebhookHandler, type GithubWebhookSettings } from './github/webhook.ts';

export interface AppDeps {
  webhook?: WebhookSettings;
  /** absent (no TETHER_GITHUB_WEBHOOK_SECRET): POST /github/webhook answers 404 */
  github?: GithubWebhookSettings;
  /** records a message durably (the acknowledgement waits for it) and acts on it in the background */
  inbound: Pick<Intake, 'receive'>;
  media: MediaStore;
  mediaSigningKey: string;
  mediaMaxBytes: number;
  /** absent: no upload route (tests of the other routes) */
  uploads?: UploadLimits;
  authorizer: UploadAuthorizer;
  /** the namespace of the relay's Sessions (runners read their own pictures under it) */
  namespace?: string;
  /** the relay's public URL (https: → the chat cookie is Secure) */
  publicUrl?: string;
  webChat?: WebChat;
  metrics: RelayMetrics;
  logger: Logger;
  ready(): boolean;
  /** false once the process cannot go on (its journal cannot write): /healthz fails so it is restarted; absent: true */
  live?(): boolean;
  /** the clock (tests set it); Date.now by default */
  now?: () => number;
}

/** How long a refused request's connection stays open (its sender reading the answer) before it is closed. */
const LINGER_MS = 1000;

/**
 * A refused request's body is never read: claiming it (read(0)) stops Node from pulling the rest
 * off the wire to discard it; what was sent waits in the kernel until the connection closes.
 */
function closeUnread(req: Request, res: Response): void {
  req.read(0);
  res.once('finish', () => setTimeout(() => req.socket.destroy(), LINGER_MS).unref());
}

/** A request's path and query for the access log, credentials in the query left out. */
const loggedUrl = (req: Request) => req.originalUrl.replace(/([?&](?:token|sig)=)[^&]*/g, '$1[redacted]');
const refOf = (req: Request) => `${req.params.namespace}/${req.params.session}/${req.params.file}`;

export function createApp(deps: AppDeps): express.Express {
  const now = deps.now ?? Date.now;
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  if (deps.logger.isLevelEnabled('debug')) {
    app.use((req, res, next) => {
      const started = now();
      res.on('finish', () =>
        deps.logger.debug(
          { method: req.method, url: loggedUrl(req), status: res.statusCode, ms: now() - started },
          'request',
        ),
      );
      next();
    });
  }

  app.post(
    '/webhook',
    express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 100 }),
    async (req, res) => {
      const stop = deps.metrics.webhookDuration.startTimer();
      if (!deps.webhook) throw new HttpError(404, 'Twilio is not configured');
      const search = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
      const verdict = checkWebhook(
        { signature: req.get('x-twilio-signature'), search, params: req.body ?? {} },
        deps.webhook,
      );
      let outcome: string = verdict.kind;
      if (verdict.kind === 'rejected') {
        if (verdict.status === 403) deps.metrics.signatureFailures.inc();
        deps.logger.warn(
          { status: verdict.status, reason: verdict.reason, ip: req.socket.remoteAddress },
          'webhook rejected',
        );
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
    },
  );

  // Without a webhook secret there is no route: the 404 below answers, the body unread.
  if (deps.github) {
    app.post(
      '/github/webhook',
      express.raw({ type: () => true, limit: GITHUB_BODY_LIMIT }),
      githubWebhookHandler({ settings: deps.github, metrics: deps.metrics, logger: deps.logger }),
    );
  }

  if (deps.uploads) {
    app.put(
      `${RELAY_UPLOAD_PATH}/:namespace/:session/:file`,
      uploadHandler({
        media: deps.media,
        maxBytes: deps.mediaMaxBytes,
        limits: deps.uploads,
        authorizer: deps.authorizer,
        metrics: deps.metrics,
        now,
      }),
    );
    if (deps.namespace) {
      app.get(
        `${RELAY_UPLOAD_PATH}/:namespace/:session/:file`,
        downloadHandler({
          media: deps.media,
          authorizer: deps.authorizer,
          namespace: deps.namespace,
          ratePerMinute: deps.uploads.ratePerMinute,
          now,
        }),
      );
    }
  }

  app.get('/media/:namespace/:session/:file', async (req, res) => {
    const ref = refOf(req);
    const check = checkMediaSignature(deps.mediaSigningKey, ref, req.query.exp, req.query.sig, now());
    if (check !== 'ok')
      throw new HttpError(check === 'expired' ? 410 : 403, check === 'expired' ? 'link expired' : 'bad signature');
    const { bytes, contentType } = await deps.media.get(ref);
    res
      .set({
        'Content-Type': contentType,
        'Cache-Control': 'private, max-age=300',
        'X-Content-Type-Options': 'nosniff',
      })
      .send(bytes);
  });

  app.use(
    chatRouter({
      webChat: deps.webChat,
      publicUrl: deps.publicUrl ?? '',
      receive: (message) => deps.inbound.receive(message),
      now,
    }),
  );

  app.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  const live = () => deps.live?.() ?? true;
  app.get('/healthz', (_req, res) => void res.status(live() ? 200 : 503).json({ ok: live() }));
  app.get('/readyz', (_req, res) => {
    const ready = deps.ready() && live();
    res.status(ready ? 200 : 503).json({ ready });
  });

  app.use((_req: Request, _res: Response) => {
    throw new HttpError(404, 'not found');
  });
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = error as { status?: number; statusCode?: number; type?: string; message?: string };
    const status = error instanceof HttpError ? error.status : (e.status ?? e.statusCode ?? 500);
    if (status >= 500 && status !== 503) deps.logger.error({ err: error, path: req.path }, 'request failed');
    else deps.logger.warn({ status, reason: e.message, path: req.path }, 'request refused');
    if (req.path === '/webhook') deps.metrics.webhookRequests.inc({ outcome: 'error' });
    if (req.path === '/github/webhook') deps.metrics.githubWebhookRequests.inc({ outcome: 'error' });
    if (!req.complete) closeUnread(req, res);
    res
      .status(status)
      .type('text/plain')
      .send(status >= 500 ? 'internal error' : (e.message ?? 'bad request'));
  });
  return app;
}
