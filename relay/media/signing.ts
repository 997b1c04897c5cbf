// Short-lived signed media URLs: HMAC-SHA256 over "<ref>\n<exp>", expiry in Unix seconds.
import { createHmac, timingSafeEqual } from 'node:crypto';

const mac = (key: string, ref: string, exp: number) =>
  createHmac('sha256', key).update(`${ref}\n${exp}`).digest('base64url');

/** A link to `ref` that works until `now` + ttlMs. */
export function signMediaUrl(baseUrl: string, key: string, ref: string, ttlMs: number, now: number): string {
  const exp = Math.floor((now + ttlMs) / 1000);
  return `${baseUrl}/media/${ref}?exp=${exp}&sig=${mac(key, ref, exp)}`;
}

export type SignatureCheck = 'ok' | 'expired' | 'bad';

export function checkMediaSignature(key: string, ref: string, exp: unknown, sig: unknown, now: number): SignatureCheck {
  if (typeof exp !== 'string' || typeof sig !== 'string' || !/^[0-9]{1,12}$/.test(exp)) return 'bad';
  const expected = Buffer.from(mac(key, ref, Number(exp)));
  const given = Buffer.from(sig);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'bad';
  return Number(exp) * 1000 < now ? 'expired' : 'ok';
}
