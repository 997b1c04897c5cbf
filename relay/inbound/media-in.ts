// Pictures the phone sends. Routing: a picture comes with a new command (its caption is the
// prompt; no caption → a look-and-ask prompt); other files are refused, voice notes are "not yet".
// Acting: each picture is fetched from Twilio and kept in the media store under the Session's own
// prefix; the Session gets only the refs.
import { IMAGE_TYPES, LIMITS, type SessionImage } from '../../common/session/schema.ts';
import { extensionOf, type ImageType } from '../media/refs.ts';
import type { MediaStore } from '../media/store.ts';
import { PermanentMediaError, type MediaFailure } from '../media/twilio-media.ts';
import type { InboundMessage } from './message.ts';
import { route, type PhoneContext, type Route } from './router.ts';

/**
 * The command of a picture sent without a caption. A user who sends a picture alone expects it
 * looked at, like showing it to a colleague; the agent says what it sees and asks, changing
 * nothing, and the next message continues the same conversation with the picture in it.
 */
export const IMAGE_ONLY_PROMPT =
  'Look at the attached picture: say briefly what it shows and how it relates to this repository, ' +
  'then ask me what I would like done. Do not change any files yet.';

const isImage = (type: string): type is ImageType => (IMAGE_TYPES as readonly string[]).includes(type);

/**
 * WhatsApp sends a sticker as one WebP picture with no text (a photo arrives as JPEG): not a
 * command, and not worth a paid run. A WebP screenshot with a caption is still a picture.
 */
const isSticker = (message: Pick<InboundMessage, 'body' | 'media'>) =>
  message.media?.length === 1 && message.media[0]!.contentType === 'image/webp' && !message.body.trim();

/** route() for a message that may carry media. */
export function routeMessage(
  message: Pick<InboundMessage, 'body' | 'media'>,
  context: PhoneContext,
  maxQueued: number,
): Route {
  const media = message.media ?? [];
  if (!media.length) return route(message.body, context, maxQueued);
  if (media.some((m) => m.contentType.startsWith('audio/'))) return { kind: 'mediaRefused', media: 'audio' };
  if (isSticker(message)) return { kind: 'mediaRefused', media: 'sticker' };
  if (!media.every((m) => isImage(m.contentType))) return { kind: 'mediaRefused', media: 'other' };
  const r = route(message.body.trim() || IMAGE_ONLY_PROMPT, context, maxQueued);
  return ['start', 'queue', 'queueFull', 'tooLong'].includes(r.kind) ? r : { kind: 'imageNotNow' };
}

/** Why the pictures of a message cannot be had: one of them (MediaFailure), or all together too large for the agent. */
export type ImageFailure = MediaFailure | 'tooMuch';

const base64Size = (bytes: number) => Math.ceil(bytes / 3) * 4;

/** Fetches one announced picture: its bytes, or throws (PermanentMediaError when a retry cannot help). */
export type FetchImage = (url: string, announced: ImageType) => Promise<Buffer>;

export interface InboundImagesOptions {
  fetch: FetchImage;
  store: Pick<MediaStore, 'putImage'>;
  namespace: string;
  /** the largest picture fetched (the reply to a larger one names it) */
  maxBytes: number;
}

export class InboundImages {
  private readonly o: InboundImagesOptions;

  constructor(options: InboundImagesOptions) {
    this.o = options;
  }

  get maxBytes(): number {
    return this.o.maxBytes;
  }

  /**
   * Fetches and keeps every picture of a message for the Session `session`: its images, or why
   * they cannot be had. Transient failures throw (the caller tries again; the journal keeps the URLs).
   * One picture at a time, so a message holds at most one picture's bytes in memory; all of them
   * together stay within what one model request can carry (LIMITS.imagesBase64Bytes).
   */
  async keep(message: InboundMessage, session: string): Promise<SessionImage[] | { failure: ImageFailure }> {
    const images: SessionImage[] = [];
    let base64 = 0;
    for (const [i, media] of (message.media ?? []).slice(0, LIMITS.images).entries()) {
      if (!isImage(media.contentType)) return { failure: 'notImage' };
      let bytes: Buffer;
      try {
        bytes = await this.o.fetch(media.url, media.contentType);
      } catch (error) {
        if (error instanceof PermanentMediaError) return { failure: error.failure };
        throw error;
      }
      base64 += base64Size(bytes.length);
      if (base64 > LIMITS.imagesBase64Bytes) return { failure: 'tooMuch' };
      const ref = `${this.o.namespace}/${session}/photo-${i + 1}.${extensionOf(media.contentType)}`;
      await this.o.store.putImage(ref, media.contentType, bytes);
      images.push({ ref, contentType: media.contentType, bytes: bytes.length });
    }
    return images;
  }
}
