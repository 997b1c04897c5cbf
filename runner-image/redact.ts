// Keeps secret values out of everything the runner writes: status, logs, diff images.
import pino, { type Logger } from 'pino';

export type Redactor = (text: string) => string;

const TOKEN_PATTERNS = [
  /\bgh[pousr]_[A-Za-z0-9]{20,}\b/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g,
  /\bsk-ant-[A-Za-z0-9_-]{10,}\b/g, // Anthropic keys
];

/** Replaces every known secret value and anything shaped like a token with [redacted]. */
export function makeRedactor(secrets: readonly string[]): Redactor {
  const values = [...new Set(secrets.filter((s) => s.length >= 4))].sort((a, b) => b.length - a.length);
  return (text: string) => {
    let out = text;
    for (const value of values) out = out.split(value).join('[redacted]');
    for (const pattern of TOKEN_PATTERNS) out = out.replace(pattern, '[redacted]');
    return out;
  };
}

/** Deep-redacts strings in a JSON-like value. */
export function redactDeep<T>(value: T, redact: Redactor): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact)) as T;
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, redact)])) as T;
  }
  return value;
}

/** pino JSON logger whose every field and message passes through the redactor. */
export function makeLogger(level: string, redact: Redactor, bindings: Record<string, string>, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: bindings,
    redact: { paths: ['*.token', '*.authorization', '*.Authorization', '*.apiKey', 'headers.authorization'], censor: '[redacted]' },
    formatters: { log: (object) => redactDeep(object, redact) },
    hooks: {
      logMethod(args, method) {
        method.apply(this, args.map((a) => (typeof a === 'string' ? redact(a) : a)) as Parameters<typeof method>);
      },
    },
    serializers: { err: (e: unknown) => (e instanceof Error ? { type: e.name, message: redact(e.message), stack: redact(e.stack ?? '') } : e) },
  }, destination);
}

export const truncate = (text: string, max: number, marker = '…'): string =>
  text.length <= max ? text : `${text.slice(0, Math.max(0, max - marker.length))}${marker}`;
