// The runner's side of pictures from the phone: it reads spec.images from the relay's GET /uploads
// with its token (checked against the Session's size and type; a gone picture is a plain failure)
// and puts them as image blocks before the prompt in the first user message to Claude Code.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MediaStore } from '../../relay/media/store.ts';
import { ClaudeConversation } from '../../runner-image/agents/claude-conversation.ts';
import { ImageUnavailable, loadImages } from '../../runner-image/pictures/from-phone.ts';
import { startMediaRelay } from '../support/media-relay.ts';
import { solidPng } from '../support/pictures.ts';

const png = solidPng(5, 5);
const dir = mkdtempSync(join(tmpdir(), 'runner-images-'));
const tokenFile = join(dir, 'token');
let server: Awaited<ReturnType<typeof startMediaRelay>>;
let relay: { url: string; tokenFile: string };

beforeAll(async () => {
  writeFileSync(tokenFile, 'runner:cmd-a\n');
  const media = new MediaStore({ dir: join(dir, 'media'), maxBytes: 4096, ttlMs: 60_000 });
  await media.putImage('ns/cmd-a/photo-1.png', 'image/png', png);
  server = await startMediaRelay(media);
  relay = { url: server.url, tokenFile };
});
afterAll(() => server.close());

const signal = new AbortController().signal;
const firstOf = async (conversation: ClaudeConversation) => {
  for await (const message of conversation.input) return message;
  throw new Error('no user message');
};

describe('the pictures of a Session, in the runner', () => {
  it('reads each from the relay with the runner token', async () => {
    expect(
      await loadImages(relay, [{ ref: 'ns/cmd-a/photo-1.png', contentType: 'image/png', bytes: png.length }], signal),
    ).toEqual([{ mediaType: 'image/png', data: png.toString('base64') }]);
    expect(await loadImages(relay, undefined, signal)).toEqual([]);
  });

  it('a picture gone, cut short or of another type is a plain failure; no relay is one too', async () => {
    await expect(
      loadImages(relay, [{ ref: 'ns/cmd-a/photo-2.png', contentType: 'image/png', bytes: 10 }], signal),
    ).rejects.toThrow(/no longer kept/);
    await expect(
      loadImages(relay, [{ ref: 'ns/cmd-a/photo-1.png', contentType: 'image/png', bytes: png.length + 1 }], signal),
    ).rejects.toBeInstanceOf(ImageUnavailable);
    await expect(
      loadImages(undefined, [{ ref: 'ns/cmd-a/photo-1.png', contentType: 'image/png', bytes: png.length }], signal),
    ).rejects.toBeInstanceOf(ImageUnavailable);
  });

  it("another Session's picture is refused by the relay", async () => {
    await expect(
      loadImages(relay, [{ ref: 'ns/cmd-b/photo-1.png', contentType: 'image/png', bytes: png.length }], signal),
    ).rejects.toThrow(/refused this runner.*403/);
  });

  it('the first user message holds the images, then the prompt', async () => {
    const host = {
      canUseTool: async () => ({ behavior: 'deny' as const, message: '' }),
      event: () => {},
      costGate: async () => undefined,
      costHeld: () => false,
      tools: {},
    };
    const conversation = new ClaudeConversation(host, signal, 'make it red', [
      { mediaType: 'image/png', data: 'AAAA' },
    ]);
    expect((await firstOf(conversation)).message.content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
      { type: 'text', text: 'make it red' },
    ]);
    const plain = new ClaudeConversation(host, signal, 'just words');
    expect((await firstOf(plain)).message.content).toBe('just words');
  });
});
