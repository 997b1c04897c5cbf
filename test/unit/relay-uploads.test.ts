// PUT /uploads: every refusal that can come before the body does (size, token, quota, slots),
// answered while the body is still unsent; the per-Session quota; slow uploads cut off.
import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../relay/app.ts';
import type { UploadLimits } from '../../relay/config.ts';
import { MediaStore } from '../../relay/media/store.ts';
import { createMetrics } from '../../relay/metrics.ts';
import { eventually } from '../support/eventually.ts';

const PNG = (size: number) =>
  Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(size - 8, 1)]);
const limits: UploadLimits = {
  sessionFiles: 3,
  sessionBytes: 7000,
  ratePerMinute: 1000,
  concurrency: 2,
  timeoutMs: 1500,
  review: { okTtlMs: 1000, failureTtlMs: 1000, maxEntries: 10 },
};
const asked: string[] = [];
const metrics = createMetrics();
const uploads = async (outcome: string) =>
  (await metrics.mediaUploads.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
let server: Server;
let port: number;

beforeAll(async () => {
  const app = createApp({
    inbound: { receive: async () => 'recorded' },
    media: new MediaStore({ dir: mkdtempSync(join(tmpdir(), 'uploads-')), maxBytes: 4096, ttlMs: 60_000 }),
    mediaSigningKey: 'k'.repeat(32),
    mediaMaxBytes: 4096,
    uploads: limits,
    metrics,
    logger: pino({ level: 'silent' }),
    ready: () => true,
    // A token "runner:<session>" belongs to that Session's runner in namespace ns.
    authorizer: {
      mayUpload: async (token, ns, session) => (asked.push(token), ns === 'ns' && token === `runner:${session}`),
    },
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

interface Answer {
  status: number;
  text: string;
}

/** Sends the headers (and `body` if given); resolves with the answer, whether or not the body was sent. */
function upload(
  path: string,
  options: { token?: string; length: number; body?: Buffer; type?: string },
): { answer: Promise<Answer>; send(body: Buffer): void } {
  const req = request({
    host: '127.0.0.1',
    port,
    method: 'PUT',
    path: `/uploads/${path}`,
    headers: {
      'content-type': options.type ?? 'image/png',
      'content-length': options.length,
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c)).on('end', () => resolve({ status: res.statusCode!, text }));
      res.on('error', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
  });
  if (options.body) req.end(options.body);
  else req.flushHeaders();
  return { answer, send: (body) => req.end(body) };
}

const store = (session: string, file: string, size: number) =>
  upload(`ns/${session}/${file}`, { token: `runner:${session}`, length: size, body: PNG(size) }).answer;

describe('PUT /uploads refuses before reading the body', () => {
  it('is the only upload route: PUT /media is not served', async () => {
    expect(
      (
        await fetch(`http://127.0.0.1:${port}/media/ns/s1/diff.png`, {
          method: 'PUT',
          body: PNG(100),
          headers: { authorization: 'Bearer runner:s1' },
        })
      ).status,
    ).toBe(404);
  });

  it.each([
    ['no token', undefined, 4000, 401],
    ['a token of another Session', 'runner:other', 4000, 403],
    ['a declared size above the limit (before any review)', 'runner:s1', 5_000_000, 413],
  ])('answers %s while the body is unsent', async (_label, token, length, status) => {
    const before = asked.length;
    const answer = await upload('ns/s1/diff.png', { token, length }).answer;
    expect(answer.status).toBe(status);
    if (status === 413) expect(asked).toHaveLength(before);
  });

  it('refuses a name off the allowlist and a type that does not match, before any review', async () => {
    const before = asked.length;
    const [invalid, unsupported] = [await uploads('invalid'), await uploads('unsupported_type')];
    expect((await upload('ns/s1/run.sh', { token: 'runner:s1', length: 10 }).answer).status).toBe(400);
    expect((await upload('ns/s1/diff.png', { token: 'runner:s1', length: 10, type: 'text/html' }).answer).status).toBe(
      415,
    );
    expect(asked).toHaveLength(before);
    expect([await uploads('invalid'), await uploads('unsupported_type')]).toEqual([invalid + 1, unsupported + 1]);
  });
});

describe('per-Session media quota', () => {
  it('counts files: an upload past the file quota is refused, replacing a kept file is not', async () => {
    for (const file of ['a.png', 'b.png', 'c.png']) expect((await store('count', file, 100)).status).toBe(201);
    const refused = await store('count', 'd.png', 100);
    expect(refused).toMatchObject({ status: 413, text: expect.stringContaining('quota 3') });
    expect((await store('count', 'a.png', 200)).status).toBe(201);
  });

  it(`counts bytes: a declared size beyond what is left is \
refused, so is an undeclared body that runs past it`, async () => {
    expect((await store('bytes', 'a.png', 4000)).status).toBe(201);
    expect((await store('bytes', 'b.png', 3500)).status).toBe(413);
    const chunked = request({
      host: '127.0.0.1',
      port,
      method: 'PUT',
      path: '/uploads/ns/bytes/c.png',
      headers: { 'content-type': 'image/png', 'transfer-encoding': 'chunked', authorization: 'Bearer runner:bytes' },
    });
    const status = new Promise<number>((resolve, reject) =>
      chunked.on('response', (res) => (res.resume(), resolve(res.statusCode!))).on('error', reject),
    );
    const tooLarge = await uploads('too_large');
    chunked.end(PNG(3500));
    expect(await status).toBe(413);
    expect(await uploads('too_large')).toBe(tooLarge + 1); // refused while reading the body, counted once
    expect((await store('bytes', 'b.png', 2900)).status).toBe(201);
  });
});

describe('upload slots and deadline', () => {
  it('holds at most the configured uploads at once, one per Session, and cuts off a slow one', async () => {
    const first = upload('ns/slow-1/diff.png', { token: 'runner:slow-1', length: 1000 });
    const second = upload('ns/slow-2/diff.png', { token: 'runner:slow-2', length: 1000 });
    // Both hold their slot once the authorizer has answered them: the slot is taken in the same turn.
    await eventually(() => expect(asked).toEqual(expect.arrayContaining(['runner:slow-1', 'runner:slow-2'])));
    await new Promise((r) => setImmediate(r));
    expect((await upload('ns/slow-3/diff.png', { token: 'runner:slow-3', length: 1000 }).answer).status).toBe(503);
    expect((await upload('ns/slow-1/shot.png', { token: 'runner:slow-1', length: 1000 }).answer).status).toBe(429);
    second.send(PNG(1000));
    expect((await second.answer).status).toBe(201);
    expect((await first.answer).status).toBe(408); // never sent: cut off at the deadline, its slot freed
    expect(await uploads('timeout')).toBe(1);
    expect((await store('slow-3', 'diff.png', 1000)).status).toBe(201);
  });
});
