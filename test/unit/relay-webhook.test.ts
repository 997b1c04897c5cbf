// POST /webhook through the real Twilio SDK validation: signed requests pass, every mutation fails.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import twilio from 'twilio';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApp } from '../../relay/app.ts';
import type { InboundMessage } from '../../relay/inbound/message.ts';
import { MediaStore } from '../../relay/media/store.ts';
import { createMetrics } from '../../relay/metrics.ts';
import { signedWebhook, type SignedWebhook } from '../support/twilio-webhook.ts';

const authToken = 'f'.repeat(32);
const publicUrl = 'https://tether.example.com/base';
const webhookUrl = `${publicUrl}/webhook`;
const allowed = '+14155550123';
const accepted: InboundMessage[] = [];
const metrics = createMetrics();
let server: Server;
let target: string;

beforeAll(async () => {
  const app = createApp({
    webhook: { authToken, webhookUrl, allowedNumbers: new Set([allowed]) },
    inbound: { receive: async (m) => (accepted.push(m), 'recorded') },
    media: new MediaStore({ dir: mkdtempSync(join(tmpdir(), 'media-')), maxBytes: 1024, ttlMs: 60_000 }),
    mediaSigningKey: 'k'.repeat(32),
    mediaMaxBytes: 1024,
    authorizer: { mayUpload: async () => false },
    metrics,
    logger: pino({ level: 'silent' }),
    ready: () => true,
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  target = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => void accepted.splice(0));

const post = (hook: Pick<SignedWebhook, 'body' | 'headers'>, url = target) =>
  fetch(url, { method: 'POST', headers: hook.headers, body: hook.body });
const valid = () => signedWebhook(authToken, webhookUrl, { from: allowed, body: 'make the navbar sticky' });
const resign = (params: Record<string, string>, url = webhookUrl, token = authToken): SignedWebhook => ({
  params,
  body: new URLSearchParams(params).toString(),
  headers: {
    'content-type': 'application/x-www-form-urlencoded',
    'x-twilio-signature': twilio.getExpectedTwilioSignature(token, url, params),
  },
});

describe('POST /webhook', () => {
  it('accepts a correctly signed message at once with empty TwiML and hands it on', async () => {
    const hook = valid();
    const res = await post(hook);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/xml');
    expect(await res.text()).toBe('<?xml version="1.0" encoding="UTF-8"?><Response></Response>');
    expect(accepted).toEqual([
      {
        id: hook.params.MessageSid,
        from: allowed,
        body: 'make the navbar sticky',
        transport: 'twilio',
        receivedAt: expect.any(String),
      },
    ]);
  });

  const signature = valid().headers['x-twilio-signature']!;
  const flips = Array.from({ length: signature.length }, (_, i): [string, string] => {
    const c = signature[i] === 'A' ? 'B' : 'A';
    return [`char ${i} changed`, signature.slice(0, i) + c + signature.slice(i + 1)];
  });
  it.each<[string, string]>([
    ...flips,
    ['empty', ''],
    ['truncated', signature.slice(0, -1)],
    ['extended', `${signature}=`],
    ['lower-cased', signature.toLowerCase()],
    ['another token', resign(valid().params, webhookUrl, 'e'.repeat(32)).headers['x-twilio-signature']!],
  ])('rejects a signature with %s (403)', async (_label, mutated) => {
    const hook = valid();
    const res = await post({ body: hook.body, headers: { ...hook.headers, 'x-twilio-signature': mutated } });
    expect(res.status).toBe(403);
    expect(accepted).toHaveLength(0);
  });

  it.each([
    ['http instead of https', 'http://tether.example.com/base/webhook'],
    ['another host', 'https://evil.example.com/base/webhook'],
    ['another path', 'https://tether.example.com/webhook'],
    ['a trailing slash', 'https://tether.example.com/base/webhook/'],
    ['an added query', 'https://tether.example.com/base/webhook?x=1'],
    ['the internal address', 'http://127.0.0.1:8080/webhook'],
  ])('rejects a request signed for %s (403)', async (_label, url) => {
    expect((await post(resign(valid().params, url))).status).toBe(403);
    expect(accepted).toHaveLength(0);
  });

  it('rejects a query string the signature did not cover (403)', async () => {
    expect((await post(valid(), `${target}?Body=rm`)).status).toBe(403);
  });

  it.each([
    ['Body changed', (p: Record<string, string>) => ({ ...p, Body: 'rm -rf /' })],
    ['From changed', (p: Record<string, string>) => ({ ...p, From: 'whatsapp:+14155550999' })],
    ['MessageSid changed', (p: Record<string, string>) => ({ ...p, MessageSid: `SM${'1'.repeat(32)}` })],
    ['a field added', (p: Record<string, string>) => ({ ...p, Extra: '1' })],
    [
      'a field removed',
      (p: Record<string, string>) => Object.fromEntries(Object.entries(p).filter(([k]) => k !== 'ProfileName')),
    ],
    ['a field duplicated', (p: Record<string, string>) => p],
  ])('rejects params with %s after signing (403)', async (label, mutate) => {
    const hook = valid();
    const body =
      label === 'a field duplicated' ? `${hook.body}&Body=again` : new URLSearchParams(mutate(hook.params)).toString();
    expect((await post({ body, headers: hook.headers })).status).toBe(403);
    expect(accepted).toHaveLength(0);
  });

  it.each([
    ['no signature header', (h: Record<string, string>) => ({ 'content-type': h['content-type']! })],
    [
      'the signature under another name',
      (h: Record<string, string>) => ({
        'content-type': h['content-type']!,
        'x-twilio-signature-2': h['x-twilio-signature']!,
      }),
    ],
    ['a JSON content type', (h: Record<string, string>) => ({ ...h, 'content-type': 'application/json' })],
    ['a text content type', (h: Record<string, string>) => ({ ...h, 'content-type': 'text/plain' })],
  ])('rejects headers with %s (403)', async (_label, mutate) => {
    const hook = valid();
    expect((await post({ body: hook.body, headers: mutate(hook.headers) })).status).toBe(403);
    expect(accepted).toHaveLength(0);
  });

  it('answers 400 for a signed request without MessageSid or From', async () => {
    const { MessageSid: _sid, SmsSid: _a, SmsMessageSid: _b, ...noSid } = valid().params;
    expect((await post(resign(noSid))).status).toBe(400);
    const { From: _from, ...noFrom } = valid().params;
    expect((await post(resign(noFrom))).status).toBe(400);
    expect(accepted).toHaveLength(0);
  });

  it('acknowledges but ignores a number outside the allowlist', async () => {
    const res = await post(signedWebhook(authToken, webhookUrl, { from: '+14155550999', body: 'hi' }));
    expect(res.status).toBe(200);
    expect(accepted).toHaveLength(0);
  });

  it('accepts an empty body (media only) and refuses an oversized one (413)', async () => {
    expect((await post(signedWebhook(authToken, webhookUrl, { from: allowed, body: '' }))).status).toBe(200);
    expect(accepted[0]!.body).toBe('');
    const huge = signedWebhook(authToken, webhookUrl, { from: allowed, body: 'x'.repeat(70_000) });
    expect((await post(huge)).status).toBe(413);
    expect(accepted).toHaveLength(1);
  });

  it('counts outcomes and signature failures', async () => {
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/tether_relay_signature_failures_total \d+/);
    expect(text).toContain('tether_relay_webhook_requests_total{outcome="accepted"}');
    expect(text).toContain('tether_relay_webhook_requests_total{outcome="rejected"}');
    expect(text).toContain('tether_relay_webhook_duration_seconds_bucket');
  });
});
