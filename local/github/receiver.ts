// A webhook receiver on loopback for tests: keeps every delivery it gets, says whether its
// signature holds for the secret, and answers what the test tells it (200 by default).
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { signature } from './webhooks.ts';

export interface Received {
  event: string;
  guid: string;
  action?: string;
  payload: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  /** X-Hub-Signature-256 matches the body with the receiver's secret. */
  signed: boolean;
}

export interface WebhookReceiver {
  url: string;
  secret: string;
  received: Received[];
  /** The next n deliveries get this status (0: the connection is dropped). */
  failNext(status: number, n?: number): void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
  const received: Received[] = [];
  let failing = { status: 0, left: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (failing.left > 0) {
        failing.left -= 1;
        if (failing.status === 0) return void req.socket.destroy();
        res.writeHead(failing.status);
        return void res.end();
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const given = Buffer.from(String(req.headers['x-hub-signature-256'] ?? ''));
      const expected = Buffer.from(signature(secret, body));
      const payload = JSON.parse(body) as Record<string, unknown>;
      received.push({
        event: String(req.headers['x-github-event']),
        guid: String(req.headers['x-github-delivery']),
        ...(typeof payload.action === 'string' ? { action: payload.action } : {}),
        payload,
        headers: req.headers,
        signed: given.length === expected.length && timingSafeEqual(given, expected),
      });
      res.writeHead(202);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/github/webhook`,
    secret,
    received,
    failNext(status, n = 1) {
      failing = { status, left: n };
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
