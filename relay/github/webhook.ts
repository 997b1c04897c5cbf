// Is this POST /github/webhook really GitHub, signed with the install's webhook secret, about
// something the phone may hear of? Nothing is read from the payload before its signature holds.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { RelayMetrics } from '../metrics.ts';
import type { GithubDeliveries, GithubDelivery } from './deliveries.ts';
import { eventsOf } from './events.ts';

/** The largest delivery taken (GitHub caps payloads at 25 MB; the events the relay reads are far smaller). */
export const GITHUB_BODY_LIMIT = 1024 * 1024;

export interface GithubWebhookSettings {
  /** TETHER_GITHUB_WEBHOOK_SECRET: the secret the webhook was set up with on GitHub */
  secret: string;
  deliveries: Pick<GithubDeliveries, 'receive'>;
}

export interface GithubDeliveryInput {
  signature: string | undefined;
  event: string | undefined;
  delivery: string | undefined;
  contentType: string | undefined;
  body: Buffer;
}

export type GithubVerdict =
  | { kind: 'rejected'; status: 400 | 401 | 415; reason: string }
  | { kind: 'ignored'; reason: string }
  | { kind: 'accepted'; delivery: GithubDelivery };

const SIGNATURE = /^sha256=([0-9a-f]{64})$/;
const DELIVERY_ID = /^[A-Za-z0-9-]{1,64}$/;
const EVENT_NAME = /^[a-z_]{1,64}$/;

/** X-Hub-Signature-256: the HMAC-SHA-256 of the raw body with the secret, compared in constant time. */
export function signatureHolds(secret: string, body: Buffer, header: string | undefined): boolean {
  const given = header && SIGNATURE.exec(header)?.[1];
  if (!given) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(Buffer.from(given, 'hex'), expected);
}

export function checkGithubDelivery(input: GithubDeliveryInput, secret: string): GithubVerdict {
  if (!input.signature) return { kind: 'rejected', status: 401, reason: 'missing X-Hub-Signature-256' };
  if (!signatureHolds(secret, input.body, input.signature))
    return { kind: 'rejected', status: 401, reason: 'bad X-Hub-Signature-256' };
  if (!input.delivery || !DELIVERY_ID.test(input.delivery))
    return { kind: 'rejected', status: 400, reason: 'missing or malformed X-GitHub-Delivery' };
  if (!input.event || !EVENT_NAME.test(input.event))
    return { kind: 'rejected', status: 400, reason: 'missing or malformed X-GitHub-Event' };
  if (!/^application\/json\b/i.test(input.contentType ?? ''))
    return { kind: 'rejected', status: 415, reason: "the webhook's content type must be application/json" };
  let payload: unknown;
  try {
    payload = JSON.parse(input.body.toString('utf8'));
  } catch {
    return { kind: 'rejected', status: 400, reason: 'the body is not JSON' };
  }
  const events = eventsOf(input.event, payload);
  if (!events.length) return { kind: 'ignored', reason: `${input.event}: nothing a phone hears of` };
  return { kind: 'accepted', delivery: { id: input.delivery, event: input.event, events } };
}

interface HandlerDeps {
  settings: GithubWebhookSettings;
  metrics: RelayMetrics;
  logger: Logger;
}

/** Checks the delivery, journals it (the 202 waits for that) and leaves acting on it to the background. */
export const githubWebhookHandler =
  ({ settings, metrics, logger }: HandlerDeps): RequestHandler =>
  async (req: Request, res: Response) => {
    const stop = metrics.githubWebhookDuration.startTimer();
    const verdict = checkGithubDelivery(
      {
        signature: req.get('x-hub-signature-256'),
        event: req.get('x-github-event'),
        delivery: req.get('x-github-delivery'),
        contentType: req.get('content-type'),
        body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      },
      settings.secret,
    );
    let outcome: string = verdict.kind;
    if (verdict.kind === 'rejected') {
      const fields = { status: verdict.status, reason: verdict.reason, ip: req.socket.remoteAddress };
      logger.warn(fields, 'GitHub webhook rejected');
      res.status(verdict.status).type('text/plain').send(verdict.reason);
    } else if (verdict.kind === 'ignored') {
      logger.info({ delivery: req.get('x-github-delivery'), reason: verdict.reason }, 'GitHub webhook ignored');
      res.status(202).type('text/plain').send('ignored');
    } else {
      outcome = await settings.deliveries.receive(verdict.delivery);
      if (outcome === 'shed') logger.warn('GitHub delivery backlog full: delivery refused with 503');
      res
        .status(outcome === 'shed' ? 503 : 202)
        .type('text/plain')
        .send(outcome);
    }
    metrics.githubWebhookRequests.inc({
      outcome: verdict.kind === 'rejected' ? `rejected_${verdict.status}` : outcome,
    });
    stop();
  };
