// Fetches a picture the phone sent from Twilio: an authenticated GET of the message's Media
// resource on the Twilio API origin only, which redirects to a short-lived URL on Twilio's media
// host. The redirect is followed without credentials and only to that host (or, when the API
// itself is on loopback as in tests, to loopback). The body is streamed and cut at the size
// limit, and its first bytes must be the image type the webhook announced.
import type { ImageType } from './refs.ts';
import { sniffImage } from './store.ts';

export interface TwilioMediaOptions {
  apiOrigin: string;
  accountSid: string;
  authToken: string;
  maxBytes: number;
  /** one fetch, redirects and body included */
  timeoutMs: number;
}

export type MediaFailure = 'tooLarge' | 'notImage' | 'refused';

/** A fetch that will not succeed on a retry: `failure` says why, for the reply. */
export class PermanentMediaError extends Error {
  readonly failure: MediaFailure;
  constructor(failure: MediaFailure, message: string) {
    super(message);
    this.name = 'PermanentMediaError';
    this.failure = failure;
  }
}

/** Where Twilio's authenticated media URLs redirect (mms.twiliocdn.com), and its legacy public host. */
const MEDIA_HOST_SUFFIX = '.twiliocdn.com';
const LEGACY_MEDIA_HOST = 's3-external-1.amazonaws.com';
const MAX_REDIRECTS = 3;
const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Whether a redirect from the Media resource may be followed (never with credentials). */
export function mayFollow(location: URL, apiOrigin: string): boolean {
  if (location.username || location.password) return false;
  if (
    location.protocol === 'https:' &&
    (location.hostname.endsWith(MEDIA_HOST_SUFFIX) || location.hostname === LEGACY_MEDIA_HOST)
  )
    return true;
  const api = new URL(apiOrigin);
  return (
    LOOPBACK.has(api.hostname) &&
    LOOPBACK.has(location.hostname) &&
    (location.protocol === 'http:' || location.protocol === 'https:')
  );
}

const transient = (status: number) => status === 404 || status === 408 || status === 429 || status >= 500;

/** Reads at most maxBytes of the body, cancelling the stream beyond it. */
async function readLimited(response: Response, maxBytes: number): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new PermanentMediaError('tooLarge', `the picture is ${declared} bytes, over ${maxBytes}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel();
      throw new PermanentMediaError('tooLarge', `the picture is over ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}

/** The response that holds the bytes: the Media resource, then redirects checked hop by hop. */
async function follow(url: string, options: TwilioMediaOptions, signal: AbortSignal): Promise<Response> {
  if (new URL(url).origin !== new URL(options.apiOrigin).origin)
    throw new PermanentMediaError('refused', 'media URL is not on the Twilio API origin');
  const authorization = `Basic ${Buffer.from(`${options.accountSid}:${options.authToken}`).toString('base64')}`;
  let response = await fetch(url, { redirect: 'manual', headers: { authorization }, signal });
  for (let hops = 0; response.status >= 300 && response.status < 400; hops++) {
    await response.body?.cancel();
    const location = response.headers.get('location');
    if (!location || hops >= MAX_REDIRECTS)
      throw new Error(`media redirect without a usable Location (status ${response.status})`);
    const next = new URL(location, response.url || url);
    if (!mayFollow(next, options.apiOrigin))
      throw new PermanentMediaError('refused', `media redirect to a host that is not Twilio's (${next.hostname})`);
    response = await fetch(next, { redirect: 'manual', signal });
  }
  return response;
}

/**
 * The picture's bytes and type. Throws PermanentMediaError when a retry cannot help (too large,
 * not the announced image type, refused); any other error is transient (Twilio may answer 404
 * for a moment after the webhook, while the media propagates).
 */
export async function fetchTwilioImage(
  url: string,
  announced: ImageType,
  options: TwilioMediaOptions,
): Promise<Buffer> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  const response = await follow(url, options, signal);
  if (response.status !== 200) {
    await response.body?.cancel();
    if (transient(response.status)) throw new Error(`Twilio media answered ${response.status}`);
    throw new PermanentMediaError('refused', `Twilio media answered ${response.status}`);
  }
  const bytes = await readLimited(response, options.maxBytes);
  const sniffed = sniffImage(bytes);
  if (sniffed !== announced)
    throw new PermanentMediaError('notImage', `the bytes are ${sniffed ?? 'no known image'}, not ${announced}`);
  return bytes;
}
