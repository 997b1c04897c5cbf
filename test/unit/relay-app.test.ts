// The rest of the HTTP surface: the web chat's token-for-cookie exchange and input checks, the
// access log, health, metrics, unknown routes.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../relay/app.ts';
import type { InboundMessage } from '../../relay/inbound/message.ts';
import { MediaStore } from '../../relay/media/store.ts';
import { createMetrics } from '../../relay/metrics.ts';
import { WebChat } from '../../relay/transports/web.ts';

const token = 'chat-token-0123456789';
const accepted: InboundMessage[] = [];
const chat = new WebChat({ phone: '+15555550100', token });
const logLines: { msg: string; url?: string }[] = [];
let ready = false;
let live = true;
let server: Server;
let base: string;
let cookie: string;

beforeAll(async () => {
  const app = createApp({
    inbound: { receive: async (m) => (accepted.push(m), 'recorded') },
    media: new MediaStore({ dir: mkdtempSync(join(tmpdir(), 'media-')), maxBytes: 1024, ttlMs: 60_000 }),
    mediaSigningKey: 'k'.repeat(32),
    mediaMaxBytes: 1024,
    authorizer: { mayUpload: async () => false },
    webChat: chat,
    publicUrl: 'https://relay.example',
    metrics: createMetrics(),
    ready: () => ready,
    live: () => live,
    logger: pino({ level: 'debug' }, { write: (line: string) => void logLines.push(JSON.parse(line)) }),
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const exchange = await fetch(`${base}/chat?token=${token}`, { redirect: 'manual' });
  cookie = exchange.headers.get('set-cookie')!.split(';')[0]!;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const send = (body: string, credentials: Record<string, string> = { cookie }, type = 'application/json') =>
  fetch(`${base}/chat/send`, { method: 'POST', body, headers: { 'content-type': type, ...credentials } });

describe('web chat sign-in', () => {
  it(`exchanges the link's token for an HttpOnly, SameSite=Strict, \
Secure cookie and redirects to a URL without it`, async () => {
    const res = await fetch(`${base}/chat?token=${token}`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('chat');
    const [pair, ...flags] = res.headers.get('set-cookie')!.split('; ');
    expect(flags.sort()).toEqual(['HttpOnly', 'Path=/', 'SameSite=Strict', 'Secure']);
    expect(pair).toMatch(/^tether_chat=[A-Za-z0-9_-]{43}$/);
    expect(pair).not.toContain(token);
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('serves the page for the cookie, framed by no one and leaking no referrer', async () => {
    const res = await fetch(`${base}/chat`, { headers: { cookie: `other=1; ${cookie}` } });
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain('token');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
  });

  it.each([
    ['no cookie', {}],
    ['a wrong cookie', { cookie: 'tether_chat=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
    ['the token itself as the cookie', { cookie: `tether_chat=${token}` }],
    ['the token as a bearer header', { authorization: `Bearer ${token}` }],
  ])('refuses the page, the events and posts with %s (401)', async (_label, credentials) => {
    expect((await fetch(`${base}/chat`, { headers: credentials })).status).toBe(401);
    expect((await fetch(`${base}/chat/events?token=${token}`, { headers: credentials })).status).toBe(401);
    expect((await send(JSON.stringify({ id: 'a1b2c3d4', text: 'x' }), credentials)).status).toBe(401);
  });

  it('refuses a wrong token in the link without setting a cookie', async () => {
    const res = await fetch(`${base}/chat?token=wrong-token-wrong`, { redirect: 'manual' });
    expect(res.status).toBe(401);
    expect(res.headers.get('set-cookie')).toBeNull();
  });

  it('keeps the token out of the access log', () => {
    const urls = logLines.filter((l) => l.msg === 'request').map((l) => l.url);
    expect(urls).toContain('/chat?token=[redacted]');
    expect(JSON.stringify(logLines)).not.toContain(token);
  });
});

describe('web chat input', () => {
  it('hands a message on as from the web chat phone and records it in the history', async () => {
    const res = await send(JSON.stringify({ id: 'a1b2c3d4-0000', text: 'make the navbar sticky' }));
    expect(res.status).toBe(202);
    expect(accepted.at(-1)).toEqual({
      id: 'web-a1b2c3d4-0000',
      from: '+15555550100',
      body: 'make the navbar sticky',
      transport: 'web',
      receivedAt: expect.any(String),
    });
    expect(chat.entries().at(-1)).toMatchObject({ from: 'me', text: 'make the navbar sticky' });
  });

  it.each([
    ['malformed JSON', '{"id":', 400],
    ['no id', JSON.stringify({ text: 'x' }), 400],
    ['an id with odd characters', JSON.stringify({ id: '../../etc/passwd', text: 'x' }), 400],
    ['a non-string text', JSON.stringify({ id: 'a1b2c3d4', text: { $gt: '' } }), 400],
    ['an oversized body', JSON.stringify({ id: 'a1b2c3d4', text: 'x'.repeat(20_000) }), 413],
  ])('refuses %s', async (_label, body, status) => {
    const before = accepted.length;
    expect((await send(body)).status).toBe(status);
    expect(accepted).toHaveLength(before);
  });

  it('streams history and new entries as server-sent events', async () => {
    const controller = new AbortController();
    const res = await fetch(`${base}/chat/events`, { signal: controller.signal, headers: { cookie } });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    await chat.send({
      to: '+15555550100',
      body: '⏳ Reading the code',
      actions: [{ label: 'approve', reply: 'approve' }],
    });
    let text = '';
    while (!text.includes('Reading the code')) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const entries = text
      .split('\n\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(entries[0]).toMatchObject({ from: 'me', text: 'make the navbar sticky' });
    expect(entries.at(-1)).toMatchObject({
      from: 'bot',
      text: '⏳ Reading the code',
      actions: [{ label: 'approve', reply: 'approve' }],
    });
  });
});

describe('health, metrics, unknown routes', () => {
  it('is live at once and ready only when told', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    ready = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('is neither live nor ready once it cannot go on (its journal cannot write)', async () => {
    live = false;
    try {
      expect((await fetch(`${base}/healthz`)).status).toBe(503);
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
    } finally {
      live = true;
    }
  });

  it('serves its own metrics', async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    for (const name of [
      'tether_relay_webhook_requests_total',
      'tether_relay_webhook_duration_seconds',
      'tether_relay_duplicates_total',
      'tether_relay_signature_failures_total',
      'tether_relay_messages_sent_total',
      'tether_relay_send_duration_seconds',
      'tether_relay_outbound_queue_depth',
    ]) {
      expect(text).toContain(`# TYPE ${name}`);
    }
  });

  it('answers 404 for unknown paths and for /webhook when Twilio is not configured', async () => {
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect(
      (
        await fetch(`${base}/webhook`, {
          method: 'POST',
          body: 'a=b',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        })
      ).status,
    ).toBe(404);
  });
});
