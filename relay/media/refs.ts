// Media references: <namespace>/<session>/<file>. Which names may be uploaded (an allowlist of
// file names, extensions and content types) and which refs a Session may have signed (its own).
import type { Logger } from 'pino';
import type { Media, Session } from '../../common/session/schema.ts';

/** The only uploads accepted: one lower-case name, one image extension, the content type it implies. */
export const MEDIA_TYPES = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
} as const;
export type ImageType = (typeof MEDIA_TYPES)[keyof typeof MEDIA_TYPES];
/** What a runner may upload (the pictures it makes). */
export type MediaType = 'image/png' | 'image/jpeg';
export const isMediaType = (type: string | undefined): type is MediaType =>
  type === 'image/png' || type === 'image/jpeg';

/** The file extension an image type is stored under. */
export const extensionOf = (type: ImageType) => (type === 'image/jpeg' ? 'jpg' : type.slice('image/'.length));

const LABEL = '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?';
const SESSION = '[a-z0-9]([-a-z0-9]{0,251}[a-z0-9])?';
const FILE = `[a-z0-9][-a-z0-9]{0,62}\\.(${Object.keys(MEDIA_TYPES).join('|')})`;
const REF_PATTERN = new RegExp(`^${LABEL}/${SESSION}/${FILE}$`);

export const isValidRef = (ref: string) => REF_PATTERN.test(ref) && !ref.includes('..');

/** The content type a valid ref's extension allows. */
export const contentTypeOf = (ref: string): ImageType =>
  MEDIA_TYPES[ref.slice(ref.lastIndexOf('.') + 1) as keyof typeof MEDIA_TYPES];

/** Where a Session's own uploads live; nothing outside it is signed for that Session. */
const sessionPrefix = (session: Pick<Session, 'metadata'>) => `${session.metadata.namespace}/${session.metadata.name}/`;

const isRelayRef = (ref: string) => !ref.startsWith('file:');

/** A relay ref this Session may show: valid and under the Session's own prefix. */
export const isOwnMedia = (session: Pick<Session, 'metadata'>, media: Pick<Media, 'ref'>) =>
  isRelayRef(media.ref) && isValidRef(media.ref) && media.ref.startsWith(sessionPrefix(session));

/** Relay refs in a Session's status that are not its own (another Session's, `..`, malformed). */
export const foreignRefs = (session: Session): string[] =>
  (session.status?.result?.media ?? []).filter((m) => isRelayRef(m.ref) && !isOwnMedia(session, m)).map((m) => m.ref);

/**
 * Logs each foreign ref once per Session (the plan already leaves it out). Remembers a bounded
 * number of (Session, ref) pairs; a forgotten one is logged again.
 */
export function foreignRefAuditor(
  logger: Logger,
  remember = 10_000,
): (key: string, session: Session | undefined) => void {
  const seen = new Set<string>();
  return (key, session) => {
    if (!session) return;
    for (const ref of foreignRefs(session)) {
      const pair = `${session.metadata.uid ?? key} ${ref}`;
      if (seen.has(pair)) continue;
      if (seen.size >= remember) seen.clear();
      seen.add(pair);
      logger.warn(
        { session: key, ref: ref.slice(0, 300) },
        "refused to sign a media ref outside the Session's own prefix",
      );
    }
  };
}
