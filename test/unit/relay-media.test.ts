// Media: runner uploads (authorized per session, refused before the body is read), signed
// short-lived GET links, no path tricks, an allowlist of names and a per-Session quota.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../relay/app.ts';
import type { UploadLimits } from '../../relay/config.ts';
import { isValidRef } from '../../relay/media/refs.ts';
import { checkMediaSignature, signMediaUrl } from '../../relay/media/signing.ts';
import { checkUpload, MediaStore } from '../../relay/media/store.ts';
import { createMetrics } from '../../relay/metrics.ts';

const key = 'k'.repeat(32);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(100, 1)]);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(100, 2)]);
const dir = mkdtempSync(join(tmpdir(), 'media-'));
const store = new MediaStore({ dir, maxBytes: 4096, ttlMs: 60_000 });
const limits: UploadLimits = {
  sessionFiles: 4,
  sessionBytes: 10_000,
  ratePerMinute: 1000,
  concurrency: 2,
  timeoutMs: 2000,
  review: { okTtlMs: 1000, failureTtlMs: 1000, maxEntries: 10 },
};
const asked: string[] = [];
/** the app's clock: signed links are made and checked against it */
let clock = Date.now();
let server: Server;
let base: string;

beforeAll(async () => {
  const app = createApp({
    inbound: { receive: async () => 'recorded' },
    media: store,
    mediaSigningKey: key,
    mediaMaxBytes: 4096,
    uploads: limits,
    authorizer: {
      mayUpload: async (token, ns, session) => {
        asked.push(token);
        return (
          token.startsWith('runner-token') &&
          ns === 'ns' &&
          session === (token === 'runner-token' ? 'sess-1' : token.slice(13))
        );
      },
    },
    metrics: createMetrics(),
    logger: pino({ level: 'silent' }),
    ready: () => true,
    now: () => clock,
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const put = (path: string, body: Buffer, type = 'image/png', token = 'runner-token') =>
  fetch(`${base}/uploads/${path}`, {
    method: 'PUT',
    body: new Uint8Array(body),
    headers: { 'content-type': type, ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });

describe('media signing', () => {
  it('accepts its own signature until expiry, nothing else', () => {
    const url = new URL(signMediaUrl(base, key, 'ns/sess-1/diff.png', 60_000, clock));
    const [exp, sig] = [url.searchParams.get('exp')!, url.searchParams.get('sig')!];
    expect(checkMediaSignature(key, 'ns/sess-1/diff.png', exp, sig, clock)).toBe('ok');
    expect(checkMediaSignature(key, 'ns/sess-1/diff.png', exp, sig, clock + 59_000)).toBe('ok');
    expect(checkMediaSignature(key, 'ns/sess-1/diff.png', exp, sig, Number(exp) * 1000 + 1)).toBe('expired');
    expect(checkMediaSignature(key, 'ns/sess-1/other.png', exp, sig, clock)).toBe('bad');
    expect(checkMediaSignature('x'.repeat(32), 'ns/sess-1/diff.png', exp, sig, clock)).toBe('bad');
    expect(checkMediaSignature(key, 'ns/sess-1/diff.png', String(Number(exp) + 1), sig, clock)).toBe('bad');
    expect(checkMediaSignature(key, 'ns/sess-1/diff.png', undefined, sig, clock)).toBe('bad');
    expect(checkMediaSignature(key, 'ns/sess-1/diff.png', exp, [sig], clock)).toBe('bad');
  });

  it.each([
    '../x.png',
    'ns/sess-1/../../etc/passwd.png',
    'ns/sess-1/a.heic',
    'ns/sess-1/.hidden.png',
    'NS/sess-1/a.png',
    'ns/sess-1/a/b.png',
    'ns/sess-1/a%2f.png',
    'ns//a.png',
    'ns/sess-1/page.html.png',
    'ns/sess-1/A.png',
    'ns/sess-1/a.svg',
    'ns/sess-1/a.png.',
    'ns/sess-1/a_b.png',
  ])('refuses the reference %s', (ref) => expect(isValidRef(ref)).toBe(false));

  it('pictures from the phone may be WebP or GIF; a runner still uploads only PNG or JPEG', () => {
    expect(isValidRef('ns/sess-1/photo-1.webp') && isValidRef('ns/sess-1/photo-2.gif')).toBe(true);
    expect(() => checkUpload('ns/sess-1/photo-2.gif', 'image/gif')).toThrow(/image\/png or image\/jpeg/);
  });
});

describe('PUT and GET /media', () => {
  it('stores an upload from the session runner and serves it by signed URL', async () => {
    const res = await put('ns/sess-1/diff.png', PNG);
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ ref: 'ns/sess-1/diff.png' });
    const got = await fetch(signMediaUrl(base, key, 'ns/sess-1/diff.png', 60_000, clock));
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await got.arrayBuffer()).equals(PNG)).toBe(true);
    expect((await put('ns/sess-1/shot.jpeg', JPEG, 'image/jpeg')).status).toBe(201);
  });

  it.each([
    ["another session's token", 'ns/sess-2/diff.png', PNG, 'image/png', 'runner-token', 403],
    ['no token', 'ns/sess-1/diff.png', PNG, 'image/png', '', 401],
    ['a name off the allowlist', 'ns/sess-1/index.html.png', PNG, 'image/png', 'runner-token', 400],
    ['a GIF content type', 'ns/sess-1/a.png', PNG, 'image/gif', 'runner-token', 415],
    ['JPEG bytes labelled PNG', 'ns/sess-1/a.png', JPEG, 'image/png', 'runner-token', 415],
    ['an extension that does not match', 'ns/sess-1/a.jpg', PNG, 'image/png', 'runner-token', 415],
    [
      'text posing as an image',
      'ns/sess-1/a.png',
      Buffer.from('<svg onload=alert(1)>'),
      'image/png',
      'runner-token',
      415,
    ],
    ['an empty body', 'ns/sess-1/a.png', Buffer.alloc(0), 'image/png', 'runner-token', 400],
    [
      'a body over the limit',
      'ns/sess-1/a.png',
      Buffer.concat([PNG, Buffer.alloc(5000)]),
      'image/png',
      'runner-token',
      413,
    ],
  ])('refuses an upload with %s', async (_label, path, body, type, token, status) => {
    expect((await put(path, body, type, token)).status).toBe(status);
  });

  it.each(['ns/sess-1/..%2F..%2Fsecret.png', 'ns/sess-1/%2e%2e%2fdiff.png', 'ns/sess-1/diff.png%00.png'])(
    'refuses the traversal %s',
    async (path) => {
      expect((await put(path, PNG)).status).toBeGreaterThanOrEqual(400);
      expect((await fetch(`${base}/media/${path}?exp=9999999999&sig=x`)).status).toBeGreaterThanOrEqual(400);
    },
  );

  it('refuses unsigned, tampered and expired links; forgets media after the TTL', async () => {
    await put('ns/sess-1/old.png', PNG);
    const url = new URL(signMediaUrl(base, key, 'ns/sess-1/old.png', 60_000, clock));
    expect((await fetch(`${base}/media/ns/sess-1/old.png`)).status).toBe(403);
    expect((await fetch(url.href.replace('old.png', 'diff.png'))).status).toBe(403);
    const shortLived = signMediaUrl(base, key, 'ns/sess-1/old.png', 1000, clock);
    expect((await fetch(shortLived)).status).toBe(200);
    clock += 2000;
    expect((await fetch(shortLived)).status).toBe(410);
    expect((await fetch(signMediaUrl(base, key, 'ns/sess-1/none.png', 60_000, clock))).status).toBe(404);
    const past = new Date(Date.now() - 120_000);
    utimesSync(join(dir, 'ns/sess-1/old.png'), past, past);
    expect((await fetch(url)).status).toBe(404);
    expect(await store.prune()).toBe(1);
  });
});
