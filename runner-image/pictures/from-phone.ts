// The pictures the phone sent with the command (spec.images): read from the relay with the
// runner's projected token (GET /uploads/<ref>, the same authorization as its uploads), checked
// against what the Session says, and handed to the agent as base64 image inputs.
import { setTimeout as sleep } from 'node:timers/promises';
import { RELAY_UPLOAD_PATH } from '../../common/session/names.ts';
import type { SessionImage } from '../../common/session/schema.ts';
import type { AgentImage } from '../agents/types.ts';
import { relayToken, type MediaDeps } from './uploads.ts';

const ATTEMPTS = 4;
const RETRY_MS = 500;
const TIMEOUT_MS = 30_000;

/** A picture that cannot be had; its message is for the user. */
export class ImageUnavailable extends Error {
  override readonly name = 'ImageUnavailable';
}

async function readOne(
  relay: NonNullable<MediaDeps['relay']>,
  image: SessionImage,
  signal: AbortSignal,
): Promise<AgentImage> {
  const response = await fetch(`${relay.url}${RELAY_UPLOAD_PATH}/${image.ref}`, {
    headers: { authorization: `Bearer ${await relayToken(relay)}` },
    signal: AbortSignal.any([signal, AbortSignal.timeout(TIMEOUT_MS)]),
  });
  if (response.status === 404 || response.status === 410)
    throw new ImageUnavailable('The picture you sent is no longer kept; please send it again.');
  if (response.status === 401 || response.status === 403)
    throw new ImageUnavailable(`The relay refused this runner the picture you sent (${response.status}).`);
  if (response.status !== 200) throw new Error(`the relay answered ${response.status} for a picture`);
  const bytes = Buffer.from(await response.arrayBuffer());
  if (bytes.length !== image.bytes || response.headers.get('content-type') !== image.contentType) {
    throw new ImageUnavailable('The picture you sent did not arrive whole; please send it again.');
  }
  return { mediaType: image.contentType, data: bytes.toString('base64') };
}

/** Every picture of the Session, in order; a relay that is briefly away is asked again. */
export async function loadImages(
  relay: MediaDeps['relay'],
  images: readonly SessionImage[] | undefined,
  signal: AbortSignal,
): Promise<AgentImage[]> {
  if (!images?.length) return [];
  if (!relay) throw new ImageUnavailable('Pictures need the relay, and this runner has no relay address.');
  const loaded: AgentImage[] = [];
  for (const image of images) {
    for (let attempt = 1; ; attempt++) {
      try {
        loaded.push(await readOne(relay, image, signal));
        break;
      } catch (error) {
        if (error instanceof ImageUnavailable || signal.aborted || attempt >= ATTEMPTS) throw error;
        await sleep(RETRY_MS * 2 ** attempt, undefined, { signal });
      }
    }
  }
  return loaded;
}
