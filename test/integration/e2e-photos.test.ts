// End to end, pictures from the phone: a photo with a caption reaches the real Claude Code as an
// image input of the first user message (the scripted model receives the very bytes), the Session
// holds only the picture's ref, and the run goes on to a pull request; media Twilio does not have
// yet is fetched again. A PDF is refused, a voice
// note is "not supported yet", a sticker is no command, a picture over the limit gets a plain reply: no Session for
// any.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';
import { OGG, PDF, solidPng } from '../support/pictures.ts';
import { useScriptedModel } from '../support/scripted-model.ts';
import { IMAGE_ONLY_PROMPT } from '../../relay/inbound/media-in.ts';

const IMAGE_LIMIT = 20_000;
const model = useScriptedModel();
let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({
    podEnv: model.env(),
    relayEnv: { RELAY_INBOUND_IMAGE_MAX_BYTES: String(IMAGE_LIMIT) },
    numbers: ['+14155550123', '+14155550124'],
  });
}, 90_000);
afterAll(async () => e2e?.stop());

interface Block {
  type?: string;
  source?: { type?: string; media_type?: string; data?: string };
  text?: string;
}

/** The image blocks of the user messages the model received for the conversation of `marker`. */
function imagesSeen(marker: string): Block[] {
  const [first] = model.turns(marker);
  const messages = (first?.body?.messages ?? []) as Array<{ role?: string; content?: string | Block[] }>;
  return messages
    .filter((m) => m.role === 'user' && Array.isArray(m.content))
    .flatMap((m) => (m.content as Block[]).filter((b) => b.type === 'image'));
}

describe('end to end: pictures from the phone', () => {
  it(
    'a photo with a caption reaches the agent as an image input; the run goes on to a pull request',
    { timeout: 150_000 },
    async () => {
      const phone = e2e.phone('+14155550123');
      const picture = solidPng(24, 16, [220, 30, 30]);
      const marker = 'photo-caption-e2e';
      e2e.twilio.failMediaNext(2); // Twilio's media is not there yet for a moment after the webhook: fetched again
      await phone.sendMedia(`script:\nwrite: seen.txt = a red rectangle\nsay: I looked at the picture (${marker}).`, [
        { bytes: picture, contentType: 'image/png' },
      ]);
      await phone.next(/^On it \(session/);
      await phone.next(/Reply \*approve\*/);

      const seen = imagesSeen(marker);
      expect(seen).toHaveLength(1);
      expect(seen[0]!.source).toEqual({ type: 'base64', media_type: 'image/png', data: picture.toString('base64') });
      const [session] = await e2e.list();
      expect(session!.spec.images).toEqual([
        {
          ref: `${e2e.stack.namespace}/${session!.metadata.name}/photo-1.png`,
          contentType: 'image/png',
          bytes: picture.length,
        },
      ]);
      expect(JSON.stringify(session!.spec)).not.toContain(picture.toString('base64').slice(0, 40));
      // Twilio's credentials went to the Media resource only, never to the short-lived link.
      expect(e2e.twilio.mediaRequests.slice(0, 3).map((r) => r.status)).toEqual([404, 404, 307]);
      const links = e2e.twilio.mediaRequests.filter((r) => r.path.startsWith('/_media/'));
      expect(links.length).toBeGreaterThan(0);
      expect(links.every((r) => r.authorization === undefined && r.status === 200)).toBe(true);

      await phone.send('approve');
      await phone.next(/Pull request opened/);
      expect(e2e.github.pulls).toHaveLength(1);
    },
  );

  it('a picture alone starts a command asking the agent to look at it and ask', { timeout: 120_000 }, async () => {
    const phone = e2e.phone('+14155550124');
    const picture = solidPng(8, 8, [30, 30, 220]);
    await phone.sendMedia('', [{ bytes: picture, contentType: 'image/png' }]);
    await phone.next(/^On it \(session/);
    await phone.next(/Reply \*approve\*/); // the scripted model's demo writes a file for any prompt that is no script
    const seen = imagesSeen(IMAGE_ONLY_PROMPT.slice(0, 40));
    expect(seen.map((b) => b.source)).toEqual([
      { type: 'base64', media_type: 'image/png', data: picture.toString('base64') },
    ]);
    await phone.send('reject');
    await phone.next(/Changes undone/);
  });

  it(
    'a PDF is refused, a voice note is not supported yet, a sticker is no command, an oversize picture gets a plain ' +
      'reply: no Session',
    { timeout: 60_000 },
    async () => {
      const phone = e2e.phone('+14155550123');
      const before = (await e2e.list()).length;
      await phone.sendMedia('please read this spec', [{ bytes: PDF, contentType: 'application/pdf' }]);
      await phone.next(/only take pictures \(JPEG, PNG, WebP or GIF\), not other files/);
      await phone.sendMedia('', [{ bytes: OGG, contentType: 'audio/ogg' }]);
      await phone.next(/Voice notes aren't supported yet/);
      await phone.sendMedia('', [{ bytes: solidPng(4, 4), contentType: 'image/webp' }]); // a sticker: WebP, no text
      await phone.next(/Stickers are not commands/);
      const big = Buffer.concat([solidPng(2, 2), randomBytes(IMAGE_LIMIT * 2)]);
      await phone.sendMedia('make the logo look like this', [{ bytes: big, contentType: 'image/png' }]);
      await phone.next(/That picture is too large \(over 20 KB\)/);
      expect(await e2e.list()).toHaveLength(before);
    },
  );
});
