// Fetching a picture from Twilio, against the fake Twilio and hostile servers on 127.0.0.1: Basic
// auth on the Media resource only, redirects followed without it and only to Twilio's media host
// (loopback when the API is on loopback), the size limit while streaming, the type by signature;
// and GET /uploads, the runner's read of its own Session's pictures.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MediaStore } from '../../relay/media/store.ts';
import { fetchTwilioImage, mayFollow, PermanentMediaError } from '../../relay/media/twilio-media.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { startMediaRelay } from '../support/media-relay.ts';
import { JPEG_START, PDF, solidPng } from '../support/pictures.ts';
import { mediaMessageSid } from '../support/twilio-webhook.ts';

let twilio: FakeTwilio;
let hostile: Server;
let hostileUrl: string;
const seen: Array<{ path: string; authorization?: string }> = [];

beforeAll(async () => {
  twilio = await startFakeTwilio();
  // Answers like a Media resource gone bad: endless bodies, redirects elsewhere, a missing Location.
  hostile = createServer((req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    if (req.url?.includes('endless')) {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.write(solidPng(2, 2).subarray(0, 8));
      const timer = setInterval(() => res.write(Buffer.alloc(64 * 1024, 1)), 1);
      res.on('close', () => clearInterval(timer));
    } else if (req.url?.includes('to-evil')) res.writeHead(307, { location: 'https://evil.example/steal' }).end();
    else if (req.url?.includes('to-loopback')) res.writeHead(302, { location: `${hostileUrl}/endless` }).end();
    else if (req.url?.includes('no-location')) res.writeHead(302).end();
    else res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  hostileUrl = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await twilio.close();
  await new Promise<void>((resolve) => hostile.close(() => resolve()));
});

const options = (overrides: object = {}) => ({
  apiOrigin: twilio.url,
  accountSid: twilio.accountSid,
  authToken: twilio.authToken,
  maxBytes: 64 * 1024,
  timeoutMs: 5_000,
  ...overrides,
});
const mediaUrl = (bytes: Buffer, type = 'image/png') =>
  twilio.inboundMedia(mediaMessageSid(), [{ bytes, contentType: type }]).MediaUrl0!;
const failure = async (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (e: unknown) => (e instanceof PermanentMediaError ? e.failure : `transient: ${String(e)}`),
  );

describe('fetching a picture from Twilio', () => {
  it('authenticates on the Media resource and follows its redirect without the credentials', async () => {
    const png = solidPng(3, 2);
    const url = mediaUrl(png);
    const before = twilio.mediaRequests.length;
    expect((await fetchTwilioImage(url, 'image/png', options())).equals(png)).toBe(true);
    const [resource, link] = twilio.mediaRequests.slice(before);
    expect(resource).toMatchObject({ status: 307, authorization: expect.stringMatching(/^Basic /) });
    expect(link).toMatchObject({ path: expect.stringMatching(/^\/_media\//), status: 200 });
    expect(link!.authorization).toBeUndefined();
  });

  it('refuses what is larger than the limit, by its Content-Length or while streaming', async () => {
    expect(
      await failure(fetchTwilioImage(mediaUrl(solidPng(200, 200, [1, 2, 3])), 'image/png', options({ maxBytes: 100 }))),
    ).toBe('tooLarge');
    const started = Date.now();
    const before = seen.length;
    const endless = options({ apiOrigin: hostileUrl, maxBytes: 1024 * 1024 });
    expect(await failure(fetchTwilioImage(`${hostileUrl}/to-loopback`, 'image/png', endless))).toBe('tooLarge');
    expect(Date.now() - started).toBeLessThan(4_000);
    const [first, redirected] = seen.slice(before);
    expect(first).toMatchObject({ path: '/to-loopback', authorization: expect.stringMatching(/^Basic /) });
    expect(redirected).toEqual({ path: '/endless', authorization: undefined });
  });

  it('checks the bytes against the announced type', async () => {
    expect(await failure(fetchTwilioImage(mediaUrl(PDF, 'image/png'), 'image/png', options()))).toBe('notImage');
    expect(await failure(fetchTwilioImage(mediaUrl(JPEG_START, 'image/png'), 'image/png', options()))).toBe('notImage');
    expect(
      (await fetchTwilioImage(mediaUrl(JPEG_START, 'image/jpeg'), 'image/jpeg', options())).equals(JPEG_START),
    ).toBe(true);
  });

  it("fetches only from the API origin and follows redirects only to Twilio's media host", async () => {
    expect(await failure(fetchTwilioImage(`${hostileUrl}/to-evil`, 'image/png', options()))).toBe('refused');
    const before = seen.length;
    expect(
      await failure(fetchTwilioImage(`${hostileUrl}/to-evil`, 'image/png', options({ apiOrigin: hostileUrl }))),
    ).toBe('refused');
    expect(seen.slice(before).map((s) => s.path)).toEqual(['/to-evil']);
    expect(
      await failure(fetchTwilioImage(`${hostileUrl}/no-location`, 'image/png', options({ apiOrigin: hostileUrl }))),
    ).toMatch(/^transient/);
    expect(mayFollow(new URL('https://mms.twiliocdn.com/AC1/abc?Expires=1'), 'https://api.twilio.com')).toBe(true);
    for (const target of [
      'http://mms.twiliocdn.com/x',
      'https://mms.twiliocdn.com.evil.example/x',
      'https://u:p@mms.twiliocdn.com/x',
      'http://127.0.0.1:80/x',
      'https://api.twilio.com.evil.example/x',
    ]) {
      expect(mayFollow(new URL(target), 'https://api.twilio.com'), target).toBe(false);
    }
    expect(mayFollow(new URL('http://127.0.0.1:9/x'), 'http://127.0.0.1:8')).toBe(true);
  });

  it('a 404 (media still propagating) or 5xx is transient; bad credentials are permanent', async () => {
    const url = mediaUrl(solidPng(2, 2));
    twilio.failMediaNext(1);
    expect(await failure(fetchTwilioImage(url, 'image/png', options()))).toMatch(/transient.*404/);
    expect(await failure(fetchTwilioImage(url, 'image/png', options()))).toBe('resolved');
    expect(await failure(fetchTwilioImage(url, 'image/png', options({ authToken: 'wrong' })))).toBe('refused');
  });
});

describe("GET /uploads: a runner reads its own Session's pictures", () => {
  let server: Awaited<ReturnType<typeof startMediaRelay>>;
  let base: string;
  const png = solidPng(2, 2);
  beforeAll(async () => {
    const media = new MediaStore({ dir: mkdtempSync(join(tmpdir(), 'read-')), maxBytes: 4096, ttlMs: 60_000 });
    await media.putImage('ns/cmd-a/photo-1.png', 'image/png', png);
    await media.putImage('ns/cmd-b/photo-1.png', 'image/png', png);
    server = await startMediaRelay(media);
    base = `${server.url}/uploads`;
  });
  afterAll(() => server.close());
  const get = (path: string, token?: string) =>
    fetch(`${base}/${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  it("serves the picture to the Session's runner only", async () => {
    const own = await get('ns/cmd-a/photo-1.png', 'runner:cmd-a');
    expect(own.status).toBe(200);
    expect(own.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await own.arrayBuffer()).equals(png)).toBe(true);
    expect((await get('ns/cmd-b/photo-1.png', 'runner:cmd-a')).status).toBe(403);
    expect((await get('other/cmd-a/photo-1.png', 'runner:cmd-a')).status).toBe(403);
    expect((await get('ns/cmd-a/photo-1.png')).status).toBe(401);
    expect((await get('ns/cmd-a/photo-9.png', 'runner:cmd-a')).status).toBe(404);
    expect((await get('ns/cmd-a/..%2fcmd-b%2fphoto-1.png', 'runner:cmd-a')).status).toBe(400);
  });
});
