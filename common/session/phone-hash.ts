// A phone's hash: the id that stands for its number in object names, labels and log lines.
// Keyed (HMAC-SHA-256 with the install's TETHER_PHONE_HASH_KEY), so a reader of logs or object
// names cannot test candidate numbers against it; only processes holding the key compute it.
import { createHash, createHmac } from 'node:crypto';

/** Hex characters kept: 64 bits, so names keep their length budget (ws-<hash>-<repo> ≤ 63). */
export const PHONE_HASH_LENGTH = 16;
/** The shortest key accepted (the chart generates 48 random characters). */
export const PHONE_HASH_KEY_MIN_LENGTH = 32;
/** Phones whose hash is kept: a controller asks for the same few on every pass and watch event. */
const HASHES_KEPT = 50_000;

/** The hash of a phone number under the install's key. */
export type PhoneHash = (phone: string) => string;

/** The install's phone hash: HMAC-SHA-256 of the number under `key`, cut to PHONE_HASH_LENGTH hex characters. */
export function phoneHasher(key: string): PhoneHash {
  if (key.length < PHONE_HASH_KEY_MIN_LENGTH)
    throw new Error(`a phone hash key needs at least ${PHONE_HASH_KEY_MIN_LENGTH} characters`);
  const hashes = new Map<string, string>();
  return (phone) => {
    let hash = hashes.get(phone);
    if (hash === undefined) {
      if (hashes.size >= HASHES_KEPT) hashes.clear();
      hash = createHmac('sha256', key).update(phone).digest('hex').slice(0, PHONE_HASH_LENGTH);
      hashes.set(phone, hash);
    }
    return hash;
  };
}

/**
 * The unkeyed hash earlier versions used (SHA-256 of the number, 16 hex characters): found by
 * trying numbers, so it is only computed to find a phone's objects those versions made
 * (docs/security.md, "Phone hashes"), never to name or label a new one, never logged.
 */
export function legacyPhoneHash(phone: string): string {
  return createHash('sha256').update(phone).digest('hex').slice(0, PHONE_HASH_LENGTH);
}
