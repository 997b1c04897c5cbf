// The media fields of a Twilio webhook (NumMedia, MediaUrl{N}, MediaContentType{N}), read strictly.
// A media URL is accepted only as this account's Media resource of this very message on the
// configured API origin; the relay later fetches exactly that URL and nothing else.

/** One attachment as the webhook announced it (not yet fetched). */
export interface InboundMedia {
  url: string;
  /** the MIME type Twilio gave, lower case, parameters left out */
  contentType: string;
}

export interface MediaSource {
  /** Twilio's REST origin (https://api.twilio.com; a local fake in tests) */
  apiOrigin: string;
  accountSid: string;
}

/** Twilio delivers at most 10 media in one message. */
export const MAX_NUM_MEDIA = 10;
const MEDIA_SID = '[Mm][Ee][0-9a-fA-F]{32}';
const CONTENT_TYPE = /^([a-z0-9][a-z0-9!#$&^_.+-]{0,63})\/([a-z0-9][a-z0-9!#$&^_.+-]{0,63})$/;

export const TWILIO_API_ORIGIN = 'https://api.twilio.com';

/** The URL of a message's Media resource (what Twilio puts in MediaUrl{N}). */
export const mediaResourceUrl = (source: MediaSource, messageSid: string, mediaSid: string) =>
  `${new URL(source.apiOrigin).origin}/2010-04-01/Accounts/${source.accountSid}` +
  `/Messages/${messageSid}/Media/${mediaSid}`;

export type MediaFields = { ok: true; media: InboundMedia[] } | { ok: false; reason: string };

/** Reads NumMedia and its MediaUrl/MediaContentType pairs; any field out of shape refuses the whole webhook. */
export function parseMediaFields(
  params: Record<string, unknown>,
  messageSid: string,
  source: MediaSource | undefined,
): MediaFields {
  const count = params.NumMedia;
  if (count === undefined || count === '0') return { ok: true, media: [] };
  if (typeof count !== 'string' || !/^[1-9][0-9]?$/.test(count) || Number(count) > MAX_NUM_MEDIA) {
    return { ok: false, reason: 'malformed NumMedia' };
  }
  if (!source) return { ok: false, reason: 'media from an unconfigured Twilio account' };
  const expected = new RegExp(`^${escape(mediaResourceUrl(source, messageSid, 'SID')).replace('SID', MEDIA_SID)}$`);
  const media: InboundMedia[] = [];
  for (let i = 0; i < Number(count); i++) {
    const url = params[`MediaUrl${i}`];
    const type = params[`MediaContentType${i}`];
    if (typeof url !== 'string' || !expected.test(url))
      return { ok: false, reason: `MediaUrl${i} is not this message's media on the Twilio API` };
    const contentType = typeof type === 'string' ? type.split(';')[0]!.trim().toLowerCase() : '';
    if (!CONTENT_TYPE.test(contentType)) return { ok: false, reason: `malformed MediaContentType${i}` };
    if (media.some((m) => m.url === url)) return { ok: false, reason: `MediaUrl${i} repeats an earlier one` };
    media.push({ url, contentType });
  }
  if (params[`MediaUrl${count}`] !== undefined) return { ok: false, reason: 'more MediaUrl fields than NumMedia' };
  return { ok: true, media };
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
