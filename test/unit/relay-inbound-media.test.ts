// Pictures from the phone, relay side: the webhook's media fields read strictly (hostile values
// refuse the webhook), routing of pictures and other files, and keeping fetched pictures under
// the Session's own prefix in the real media store.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_NUM_MEDIA, mediaResourceUrl, parseMediaFields } from '../../relay/inbound/media-fields.ts';
import { IMAGE_ONLY_PROMPT, InboundImages, routeMessage } from '../../relay/inbound/media-in.ts';
import { Journal } from '../../relay/inbound/journal.ts';
import { checkWebhook } from '../../relay/inbound/webhook.ts';
import { MediaStore } from '../../relay/media/store.ts';
import { PermanentMediaError } from '../../relay/media/twilio-media.ts';
import { mediaMessageSid, signedWebhook } from '../support/twilio-webhook.ts';
import { PDF, solidPng } from '../support/pictures.ts';
import { LIMITS } from '../../common/session/schema.ts';
import { text } from '../../relay/text.ts';

const source = { apiOrigin: 'https://api.twilio.com', accountSid: `AC${'a'.repeat(32)}` };
const sid = mediaMessageSid();
const mediaSid = (n: number) => `ME${String(n).padStart(32, '0')}`;
const urlOf = (n: number, message = sid) => mediaResourceUrl(source, message, mediaSid(n));
const fields = (extra: Record<string, string>) => parseMediaFields(extra, sid, source);

describe('webhook media fields', () => {
  it(`reads NumMedia pairs of this account's media \
of this message, content types lower-cased without parameters`, () => {
    expect(
      fields({
        NumMedia: '2',
        MediaUrl0: urlOf(0),
        MediaContentType0: 'image/JPEG',
        MediaUrl1: urlOf(1),
        MediaContentType1: 'audio/ogg; codecs=opus',
      }),
    ).toEqual({
      ok: true,
      media: [
        { url: urlOf(0), contentType: 'image/jpeg' },
        { url: urlOf(1), contentType: 'audio/ogg' },
      ],
    });
    expect(fields({})).toEqual({ ok: true, media: [] });
    expect(fields({ NumMedia: '0' })).toEqual({ ok: true, media: [] });
  });

  it.each([
    ['NumMedia out of range', { NumMedia: String(MAX_NUM_MEDIA + 1) }],
    ['NumMedia negative', { NumMedia: '-1' }],
    ['NumMedia not a whole number', { NumMedia: '1.0' }],
    ['NumMedia with spaces', { NumMedia: ' 1' }],
    ['NumMedia a leading zero', { NumMedia: '01', MediaUrl0: urlOf(0), MediaContentType0: 'image/png' }],
    [
      'a missing MediaUrl',
      { NumMedia: '2', MediaUrl0: urlOf(0), MediaContentType0: 'image/png', MediaContentType1: 'image/png' },
    ],
    [
      'a URL on another host',
      {
        NumMedia: '1',
        MediaUrl0: urlOf(0).replace('api.twilio.com', 'api.twilio.com.evil.example'),
        MediaContentType0: 'image/png',
      },
    ],
    [
      'a URL over http',
      { NumMedia: '1', MediaUrl0: urlOf(0).replace('https:', 'http:'), MediaContentType0: 'image/png' },
    ],
    [
      'a URL with credentials',
      { NumMedia: '1', MediaUrl0: urlOf(0).replace('https://', 'https://u:p@'), MediaContentType0: 'image/png' },
    ],
    [
      "another account's media",
      {
        NumMedia: '1',
        MediaUrl0: mediaResourceUrl({ ...source, accountSid: `AC${'b'.repeat(32)}` }, sid, mediaSid(0)),
        MediaContentType0: 'image/png',
      },
    ],
    [
      "another message's media",
      { NumMedia: '1', MediaUrl0: urlOf(0, mediaMessageSid()), MediaContentType0: 'image/png' },
    ],
    [
      'a path walking out',
      { NumMedia: '1', MediaUrl0: `${urlOf(0)}/../../../Calls.json`, MediaContentType0: 'image/png' },
    ],
    ['a query string', { NumMedia: '1', MediaUrl0: `${urlOf(0)}?x=1`, MediaContentType0: 'image/png' }],
    [
      'a repeated URL',
      {
        NumMedia: '2',
        MediaUrl0: urlOf(0),
        MediaContentType0: 'image/png',
        MediaUrl1: urlOf(0),
        MediaContentType1: 'image/png',
      },
    ],
    [
      'more URLs than NumMedia',
      { NumMedia: '1', MediaUrl0: urlOf(0), MediaContentType0: 'image/png', MediaUrl1: urlOf(1) },
    ],
    ['no content type', { NumMedia: '1', MediaUrl0: urlOf(0) }],
    ['a malformed content type', { NumMedia: '1', MediaUrl0: urlOf(0), MediaContentType0: 'image/png\r\nX: y' }],
  ])('refuses %s', (_name, params) => {
    expect(fields(params).ok).toBe(false);
  });

  it('refuses media when no Twilio account is configured to fetch it with', () => {
    expect(
      parseMediaFields({ NumMedia: '1', MediaUrl0: urlOf(0), MediaContentType0: 'image/png' }, sid, undefined).ok,
    ).toBe(false);
  });

  it('a signed webhook with hostile media is refused with 400; a good one is accepted with its media', () => {
    const settings = {
      authToken: 't'.repeat(32),
      webhookUrl: 'https://relay.example/webhook',
      allowedNumbers: new Set(['+14155550123']),
      media: source,
    };
    const check = (media: Record<string, string>) => {
      const hook = signedWebhook(settings.authToken, settings.webhookUrl, {
        from: '+14155550123',
        body: 'fix this',
        sid,
        media,
      });
      return checkWebhook({ signature: hook.headers['x-twilio-signature'], search: '', params: hook.params }, settings);
    };
    expect(
      check({ NumMedia: '1', MediaUrl0: 'http://127.0.0.1:1/secret', MediaContentType0: 'image/png' }),
    ).toMatchObject({ kind: 'rejected', status: 400 });
    const accepted = check({ NumMedia: '1', MediaUrl0: urlOf(0), MediaContentType0: 'image/png' });
    expect(accepted).toMatchObject({
      kind: 'accepted',
      message: { body: 'fix this', media: [{ url: urlOf(0), contentType: 'image/png' }] },
    });
    expect(check({ NumMedia: '0' })).toMatchObject({ kind: 'accepted' });
    expect((check({ NumMedia: '0' }) as { message: object }).message).not.toHaveProperty('media');
  });
});

describe('routing a message with media', () => {
  const idle = { queued: 0 };
  const image = [{ url: urlOf(0), contentType: 'image/jpeg' }];
  const question = {
    current: {
      name: 's1',
      phase: 'AwaitingApproval' as const,
      pending: {
        id: 'q1',
        kind: 'question' as const,
        questions: [{ question: 'Which?', options: [{ label: 'A' }] }],
        createdAt: '',
      },
    },
    queued: 0,
  };

  it('the caption is the command; a picture alone gets the look-and-ask command', () => {
    expect(routeMessage({ body: ' make the header look like this ', media: image }, idle, 3)).toEqual({
      kind: 'start',
      prompt: 'make the header look like this',
    });
    expect(routeMessage({ body: '', media: image }, idle, 3)).toEqual({ kind: 'start', prompt: IMAGE_ONLY_PROMPT });
    expect(
      routeMessage({ body: 'also this', media: image }, { current: { name: 's1', phase: 'Working' }, queued: 0 }, 3),
    ).toMatchObject({ kind: 'queue' });
  });

  it('voice notes are "not yet", other files refused, a picture as an answer or keyword is not taken', () => {
    expect(routeMessage({ body: '', media: [{ url: urlOf(0), contentType: 'audio/ogg' }] }, idle, 3)).toEqual({
      kind: 'mediaRefused',
      media: 'audio',
    });
    expect(
      routeMessage({ body: 'read this', media: [{ url: urlOf(0), contentType: 'application/pdf' }] }, idle, 3),
    ).toEqual({ kind: 'mediaRefused', media: 'other' });
    expect(
      routeMessage({ body: 'x', media: [...image, { url: urlOf(1), contentType: 'video/mp4' }] }, idle, 3),
    ).toEqual({ kind: 'mediaRefused', media: 'other' });
    expect(routeMessage({ body: 'x', media: [{ url: urlOf(0), contentType: 'image/heic' }] }, idle, 3)).toEqual({
      kind: 'mediaRefused',
      media: 'other',
    });
    expect(routeMessage({ body: '1', media: image }, question, 3)).toEqual({ kind: 'imageNotNow' });
    expect(routeMessage({ body: '', media: image }, question, 3)).toEqual({ kind: 'imageNotNow' });
    expect(routeMessage({ body: 'status', media: image }, idle, 3)).toEqual({ kind: 'imageNotNow' });
    expect(routeMessage({ body: 'status' }, idle, 3)).toEqual({ kind: 'status' });
  });

  it(`a sticker (one WebP picture, no text) gets a plain answer, \
not a paid run; a WebP with a caption is a picture`, () => {
    const webp = [{ url: urlOf(0), contentType: 'image/webp' }];
    expect(routeMessage({ body: '', media: webp }, idle, 3)).toEqual({ kind: 'mediaRefused', media: 'sticker' });
    expect(routeMessage({ body: '  ', media: webp }, question, 3)).toEqual({ kind: 'mediaRefused', media: 'sticker' });
    expect(routeMessage({ body: 'make it look like this', media: webp }, idle, 3)).toEqual({
      kind: 'start',
      prompt: 'make it look like this',
    });
  });
});

describe('keeping the pictures of a command', () => {
  const png = solidPng(4, 3);
  const message = {
    id: sid,
    from: '+14155550123',
    body: 'x',
    transport: 'twilio' as const,
    media: [
      { url: urlOf(0), contentType: 'image/png' },
      { url: urlOf(1), contentType: 'image/png' },
    ],
  };
  const store = () => new MediaStore({ dir: mkdtempSync(join(tmpdir(), 'inbound-')), maxBytes: 4096, ttlMs: 60_000 });

  it("stores each under the Session's own prefix and returns only refs", async () => {
    const media = store();
    const images = new InboundImages({ fetch: async () => png, store: media, namespace: 'tether', maxBytes: 4096 });
    const kept = await images.keep(message, 'cmd-abc');
    expect(kept).toEqual([
      { ref: 'tether/cmd-abc/photo-1.png', contentType: 'image/png', bytes: png.length },
      { ref: 'tether/cmd-abc/photo-2.png', contentType: 'image/png', bytes: png.length },
    ]);
    expect((await media.get('tether/cmd-abc/photo-2.png')).bytes.equals(png)).toBe(true);
  });

  it('a permanent failure becomes a reason; a transient one throws for a retry', async () => {
    const tooLarge = new InboundImages({
      fetch: async () => {
        throw new PermanentMediaError('tooLarge', 'big');
      },
      store: store(),
      namespace: 'tether',
      maxBytes: 4096,
    });
    expect(await tooLarge.keep(message, 'cmd-abc')).toEqual({ failure: 'tooLarge' });
    const flaky = new InboundImages({
      fetch: async () => {
        throw new Error('Twilio media answered 404');
      },
      store: store(),
      namespace: 'tether',
      maxBytes: 4096,
    });
    await expect(flaky.keep(message, 'cmd-abc')).rejects.toThrow('404');
    const lying = new InboundImages({ fetch: async () => PDF, store: store(), namespace: 'tether', maxBytes: 4096 });
    await expect(lying.keep(message, 'cmd-abc')).rejects.toThrow(/not a image\/png/);
  });

  it('refuses pictures that together exceed what one model request can carry', async () => {
    const big = Buffer.concat([solidPng(2, 2), Buffer.alloc(LIMITS.imageBytes - 200)]);
    const ten = {
      ...message,
      media: Array.from({ length: 10 }, (_, i) => ({ url: urlOf(i), contentType: 'image/png' })),
    };
    const putImage = async () => {};
    const images = new InboundImages({
      fetch: async () => big,
      store: { putImage },
      namespace: 'tether',
      maxBytes: LIMITS.imageBytes,
    });
    expect(await images.keep(ten, 'cmd-abc')).toEqual({ failure: 'tooMuch' });
    const four = { ...message, media: ten.media.slice(0, 4) };
    expect(await images.keep(four, 'cmd-abc')).toHaveLength(4);
    expect(text.imageFailed('tooMuch', LIMITS.imageBytes)).toMatch(/too large together \(over 15 MB in all\)/);
  });
});

describe("the journal keeps a message's media", () => {
  it('a restart hands back the media URLs of a message not yet acted on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'journal-media-'));
    const message = {
      id: sid,
      from: '+14155550123',
      body: 'like this',
      transport: 'twilio' as const,
      media: [{ url: urlOf(0), contentType: 'image/png' }],
    };
    const journal = await Journal.open(dir);
    await journal.record(message);
    await journal.close();
    const reopened = await Journal.open(dir);
    expect(reopened.records().map((r) => r.message)).toEqual([message]);
    await reopened.close();
  });
});
