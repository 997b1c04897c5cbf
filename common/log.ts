// The one logger factory and the one redaction list of every component: pino JSON lines with the
// component's name, errors with their stack, secrets and phone numbers kept out of every line.
import pino, { type DestinationStream, type Logger } from 'pino';
import { maskPhone } from './session/display.ts';

export type { Logger };
export type Redactor = (text: string) => string;

const CENSOR = '[redacted]';

/** Fields whose values never reach a log line, whichever component logs them. */
export const REDACT_PATHS = [
  'token',
  'authToken',
  'signingKey',
  'password',
  'authorization',
  'apiKey',
  '*.token',
  '*.authToken',
  '*.signingKey',
  '*.password',
  '*.authorization',
  '*.Authorization',
  '*.apiKey',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers["x-twilio-signature"]',
  'headers["x-twilio-signature"]',
  'config.twilio.authToken',
  'config.media.signingKey',
  'config.webChat.token',
  'spec.phone',
  '*.spec.phone',
];

/** Strings shaped like credentials, redacted wherever they appear (status, logs, images). */
const TOKEN_PATTERNS = [
  /\bgh[pousr]_[A-Za-z0-9]{20,}\b/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g,
  /\bsk-ant-[A-Za-z0-9_-]{10,}\b/g, // Anthropic keys
  // JWTs (ServiceAccount tokens among them), signed or not; only where a token can start, so that
  // a long run of "eyJ" is scanned once, not once per occurrence.
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g,
];

const PHONE = /(whatsapp:)?\+[1-9][0-9]{6,14}/g;
/** Shorter base64 fragments of a secret are not looked for: they would match ordinary text. */
const MIN_BASE64_FRAGMENT = 8;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const anyCaseHex = (byte: number) =>
  [...byte.toString(16).padStart(2, '0')].map((c) => (/[a-f]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('');

/**
 * The secret as written or percent-encoded, character by character in any mix, either hex case, once or twice;
 * space also as +.
 */
function encodedForms(secret: string): RegExp {
  const chars = [...secret].map((char) => {
    const percent = [...Buffer.from(char, 'utf8')].map((byte) => `%(?:25)?${anyCaseHex(byte)}`).join('');
    return `(?:${escapeRegExp(char)}|${percent}${char === ' ' ? '|\\+' : ''})`;
  });
  return new RegExp(chars.join(''), 'g');
}

/**
 * What the secret looks like inside any base64 or base64url text (a Basic auth header, a
 * credentials file): for each of the three alignments, the characters that depend on its bytes only.
 */
function base64Forms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = [0, 1, 2].flatMap((offset) => {
    const aligned = Buffer.concat([Buffer.alloc(offset), bytes]);
    const encoded = aligned.toString('base64').replace(/=+$/, '');
    const core = encoded.slice([0, 2, 3][offset], aligned.length % 3 === 0 ? undefined : -1);
    return core.length < MIN_BASE64_FRAGMENT ? [] : [core, core.replace(/\+/g, '-').replace(/\//g, '_')];
  });
  return [...new Set(forms)];
}

/** A redactor that can be told more secret values as the process reads them (a token renewed under it). */
export interface LearningRedactor extends Redactor {
  /** From now on, `secret` is redacted too. */
  learn(secret: string): void;
  /** Every secret value it knows. */
  known(): readonly string[];
}

/**
 * Replaces every given secret value (plain, URL-encoded, inside base64) and anything shaped like a token with
 * [redacted]; `learn` adds a value.
 */
export function makeRedactor(secrets: readonly string[] = []): LearningRedactor {
  let values: string[] = [];
  let encoded: RegExp[] = [];
  let base64: string[] = [];
  const learnAll = (more: readonly string[]) => {
    const fresh = more.filter((s) => s.length >= 4 && !values.includes(s));
    if (fresh.length === 0) return;
    values = [...values, ...new Set(fresh)].sort((a, b) => b.length - a.length);
    encoded = values.map(encodedForms);
    base64 = [...new Set(values.flatMap(base64Forms))].sort((a, b) => b.length - a.length);
  };
  learnAll(secrets);
  const redact = (text: string) => {
    let out = text;
    for (const pattern of encoded) out = out.replace(pattern, CENSOR);
    for (const form of base64) out = out.split(form).join(CENSOR);
    for (const pattern of TOKEN_PATTERNS) out = out.replace(pattern, CENSOR);
    return out;
  };
  return Object.assign(redact, { learn: (secret: string) => learnAll([secret]), known: () => values });
}

/** Masks every E.164 number in a string: +14155550123 → +1415•••0123. */
export const maskPhonesIn = (text: string) => text.replace(PHONE, (m) => maskPhone(m));

/** Applies a redactor to every string in a JSON-like value (plain objects and arrays). */
export function redactDeep<T>(value: T, redact: Redactor): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact)) as T;
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, redact)])) as T;
  }
  return value;
}

/** pino's error serializer (type, message, stack with causes, own fields), then redacted. */
function serializeError(error: unknown, redact: Redactor): unknown {
  const serialized = pino.stdSerializers.err(error as Error);
  return redactDeep(serialized === error ? error : { ...serialized }, redact);
}

export interface LoggerOptions {
  component: string;
  level: string;
  /** Extra fields on every line (e.g. the controller replica's identity). */
  bindings?: Record<string, string>;
  /** Secret values of this process; token-shaped strings are redacted regardless. */
  redact?: Redactor;
  destination?: DestinationStream;
}

/** A pino logger whose every message, field and error passes through the redaction list. */
export function createLogger(options: LoggerOptions): Logger {
  const secrets = options.redact ?? makeRedactor();
  const clean: Redactor = (text) => maskPhonesIn(secrets(text));
  return pino(
    {
      level: options.level,
      base: { component: options.component, ...options.bindings },
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      formatters: { log: (object) => redactDeep(object, clean) },
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === 'string' ? clean(a) : a)) as Parameters<typeof method>);
        },
      },
      serializers: { err: (error: unknown) => serializeError(error, clean) },
    },
    options.destination,
  );
}
