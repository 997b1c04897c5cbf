// Schema pieces more than one component's configuration uses: each variable kind written once.
import { Type } from '@sinclair/typebox';
import { parseDuration } from '../session/display.ts';
import { PHONE_HASH_KEY_MIN_LENGTH } from '../session/phone-hash.ts';
import {
  DNS_LABEL_PATTERN,
  DURATION_OR_MS_PATTERN,
  DURATION_PATTERN,
  HTTP_URL_PATTERN,
  PROXY_URL_PATTERN,
} from '../session/patterns.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** TETHER_LOG_LEVEL: every component's pino level. */
export const logLevel = () =>
  Type.Union(
    LOG_LEVELS.map((level) => Type.Literal(level)),
    { default: 'info', description: 'pino level' },
  );

/** Old variable names still read, with the name each has now (each use logs one deprecation line). */
export const RENAMED = {
  LOG_LEVEL: 'TETHER_LOG_LEVEL',
  RELAY_DAILY_BUDGET_USD: 'TETHER_DAILY_BUDGET_USD',
  RELAY_BUDGET_TIMEZONE: 'TETHER_BUDGET_TIMEZONE',
} as const;

/** The renamed variables among a component's own. */
export const renamedOf = (...names: Array<keyof typeof RENAMED>) =>
  Object.fromEntries(names.map((old) => [old, RENAMED[old]]));

export const namespaceName = (description: string, fallback?: string) =>
  Type.String({ pattern: DNS_LABEL_PATTERN, description, ...(fallback ? { default: fallback } : {}) });

/** TETHER_PHONE_HASH_KEY: the install's secret key of phone hashes (relay and controller, the same value). */
export const phoneHashKey = () =>
  Type.String({
    minLength: PHONE_HASH_KEY_MIN_LENGTH,
    description:
      `the install's secret key of phone hashes, at least ${PHONE_HASH_KEY_MIN_LENGTH} characters ` +
      '(the chart generates one)',
  });

export const httpUrl = (description: string) => Type.String({ pattern: HTTP_URL_PATTERN, description });

/** TETHER_CLAUDE_MODEL: the model Claude Code runs (the runner's variable; the controller passes the chart's). */
export const CLAUDE_MODEL_PATTERN = '^[A-Za-z0-9._:@/-]+$';
export const claudeModel = (description: string, fallback?: string) =>
  Type.String({ minLength: 1, pattern: CLAUDE_MODEL_PATTERN, description, ...(fallback ? { default: fallback } : {}) });

/**
 * A proxy URL (HTTPS_PROXY, HTTP_PROXY) with no credential in it — the proxy must trust the Pod by its
 * address — and a NO_PROXY list: no spaces.
 */
export const proxyUrl = (description: string) => Type.String({ pattern: PROXY_URL_PATTERN, description });
export const noProxyList = (description: string) => Type.String({ pattern: '^[^\\s]+$', description });

/** A Session timeout (whole h/m/s, as spec.timeouts takes it). */
export const sessionDuration = (fallback: string, description: string) =>
  Type.String({ pattern: DURATION_PATTERN, default: fallback, description });

/** A duration of whole h/m/s units, or of milliseconds (250ms). */
export const duration = (fallback: string, description: string) =>
  Type.String({ pattern: DURATION_OR_MS_PATTERN, default: fallback, description });

/** A duration variable's text in milliseconds (it already matches DURATION_OR_MS_PATTERN). */
export const durationMs = (text: string): number =>
  text.endsWith('ms') ? Number(text.slice(0, -2)) : parseDuration(text);

/** An IANA time zone this runtime knows, or a plain error (for checked()). */
export function timeZone(name: string): string {
  try {
    new Intl.DateTimeFormat('en-CA', { timeZone: name });
  } catch {
    throw new Error(`"${name.slice(0, 40)}" is not an IANA time zone (e.g. UTC, Europe/Berlin)`);
  }
  return name;
}
