// The relay's configuration: the only reader of process.env. Parsed once at start-up;
// a bad value stops the process with a message naming the variable.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { MAX_QUEUED_CEILING, SESSION_DEFAULTS, type SessionDefaults } from '../common/session/defaults.ts';
import { E164_PATTERN, LIMITS } from '../common/session/schema.ts';
import { parseDuration } from '../common/session/display.ts';
import {
  BRANCH_PATTERN,
  DEFAULT_REPO_HOSTS,
  parseRepoHosts,
  REPO_URL_PATTERN,
  repoProblem,
} from '../common/session/repo.ts';
import { REPO_NAME_MAX_LENGTH, REPO_NAME_PATTERN } from '../common/session/names.ts';
import { nameFromUrl, repoList, type NamedRepo } from './repo-list.ts';
import { BUDGET_DEFAULTS } from './outbound/cadence.ts';
import { INBOUND_CONCURRENCY } from './inbound/handler.ts';
import { COST_DEFAULTS, type CostBudget } from '../common/session/budget.ts';

const str = (description: string, extra: object = {}) => Type.String({ minLength: 1, description, ...extra });
/** `minMs`: shorter values break the feature (a timeout nothing can meet, progress with no cadence), so they are refused. */
const duration = (fallback: string, description: string, minMs?: number) =>
  Type.String({
    pattern: '^([0-9]+(h|m|s))+$|^[0-9]+ms$',
    default: fallback,
    description,
    ...(minMs ? { minMs } : {}),
  });
const specDuration = (fallback: string, description: string) =>
  Type.String({ pattern: '^([0-9]+(h|m|s))+$', default: fallback, description });
const dollars = (fallback: number, description: string) =>
  Type.String({ pattern: '^[0-9]{1,6}(\\.[0-9]{1,2})?$', default: String(fallback), description });
const int = (fallback: number, min: number, max: number, description: string) =>
  Type.String({ pattern: '^[0-9]+$', default: String(fallback), description, min, max });

/** Every variable the relay reads, with its rules. Values arrive as strings. */
export const ENV = Type.Object({
  TWILIO_ACCOUNT_SID: Type.Optional(
    str('Twilio account SID; absent → web transport only', { pattern: '^AC[0-9a-fA-F]{32}$' }),
  ),
  TWILIO_AUTH_TOKEN: Type.Optional(str('Twilio auth token (webhook signatures and the REST API)')),
  TWILIO_WHATSAPP_FROM: Type.Optional(str('sender, whatsapp:+1…', { pattern: `^whatsapp:\\+[1-9][0-9]{6,14}$` })),
  TWILIO_API_URL: Type.Optional(str('base URL of the Messages API (tests: a local fake)', { pattern: '^https?://' })),
  TWILIO_TEMPLATE_SID: Type.Optional(
    str('content template for messages outside the 24-hour window', { pattern: '^HX[0-9a-fA-F]{32}$' }),
  ),
  TWILIO_BUTTONS: Type.Union([Type.Literal('true'), Type.Literal('false')], {
    default: 'true',
    description: 'requests carry WhatsApp quick-reply buttons (Content API templates the relay creates)',
  }),
  PUBLIC_URL: str('public base URL of the relay; the webhook is PUBLIC_URL/webhook', {
    pattern: '^https?://[^/?#]+(/[^?#]*)?$',
  }),
  ALLOWED_NUMBERS: Type.String({ default: '', description: 'comma-separated E.164 allowlist' }),
  TETHER_NAMESPACE: str('namespace of the Session objects', {
    default: 'tether',
    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  }),
  TETHER_RUNNER_NAMESPACE: Type.Optional(
    str('namespace of runner Pods (media uploads); absent → TETHER_NAMESPACE', {
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
    }),
  ),
  TETHER_REPO_URL: str('git remote for new Sessions', { pattern: REPO_URL_PATTERN }),
  TETHER_REPO_BASE_BRANCH: str('base branch for new Sessions', { default: 'main', pattern: BRANCH_PATTERN }),
  TETHER_REPO_NAME: Type.Optional(
    str('short name of TETHER_REPO_URL for the phone (@name, repo name); absent → its last path segment', {
      maxLength: REPO_NAME_MAX_LENGTH,
      pattern: REPO_NAME_PATTERN,
    }),
  ),
  TETHER_REPOS: Type.Optional(str('more repositories as JSON: [{"name":"web","url":"https://…","baseBranch":"main"}]')),
  TETHER_REPO_HOSTS: str(
    "the install's repository host list, the controller's: hosts (host[:port]) and folders every repository must be on",
    { default: DEFAULT_REPO_HOSTS.join(',') },
  ),
  RELAY_REPO_CHOICES_CONFIGMAP: str("ConfigMap holding each phone's default repository (repo <name>)", {
    default: 'tether-repo-choices',
    pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
  }),
  TETHER_RUN_TIMEOUT: specDuration(SESSION_DEFAULTS.timeouts.run, 'spec.timeouts.run of new Sessions'),
  TETHER_APPROVAL_TIMEOUT: specDuration(SESSION_DEFAULTS.timeouts.approval, 'spec.timeouts.approval of new Sessions'),
  TETHER_MAX_QUEUED: int(
    SESSION_DEFAULTS.maxQueued,
    0,
    MAX_QUEUED_CEILING,
    'commands a phone may have waiting while one runs',
  ),
  RELAY_PORT: int(8080, 1, 65535, 'HTTP port'),
  RELAY_WEB_CHAT_TOKEN: Type.Optional(str('token for /chat; absent → web chat disabled', { minLength: 16 })),
  RELAY_WEB_CHAT_PHONE: str('E.164 identity of the web chat user', { default: '+15555550100', pattern: E164_PATTERN }),
  RELAY_MEDIA_SIGNING_KEY: str('HMAC key for media URLs (≥ 32 characters)', { minLength: 32 }),
  RELAY_MEDIA_DIR: str('folder for uploaded media', { default: '/var/lib/tether/media' }),
  RELAY_MEDIA_TTL: duration('24h', 'how long uploaded media is kept'),
  RELAY_MEDIA_URL_TTL: duration('10m', 'lifetime of a signed media URL'),
  RELAY_MEDIA_MAX_BYTES: int(LIMITS.mediaBytes, 1024, LIMITS.mediaBytes, 'largest accepted upload'),
  RELAY_MEDIA_SESSION_FILES: int(100, 1, 1000, 'files a Session may keep in the media store'),
  RELAY_MEDIA_SESSION_BYTES: int(
    50 * 1024 * 1024,
    1024,
    1024 * 1024 * 1024,
    'bytes a Session may keep in the media store',
  ),
  RELAY_UPLOAD_RATE: int(30, 1, 10_000, 'uploads per minute per source address and per runner (429 above)'),
  RELAY_UPLOAD_CONCURRENCY: int(
    4,
    1,
    64,
    'uploads whose bodies are read at once (503 above); memory ≤ this × RELAY_MEDIA_MAX_BYTES',
  ),
  RELAY_UPLOAD_TIMEOUT: duration('30s', 'time an authorized upload may take to arrive', 1000),
  RELAY_INBOUND_IMAGE_MAX_BYTES: int(
    LIMITS.imageBytes,
    1024,
    LIMITS.imageBytes,
    'largest picture taken from the phone (larger: a plain reply)',
  ),
  RELAY_INBOUND_IMAGE_TIMEOUT: duration(
    '30s',
    'time one picture may take to arrive from Twilio (then it is retried); at least 1s',
    1000,
  ),
  RELAY_TOKEN_REVIEW_TTL: duration(
    '30s',
    'how long an accepted runner token is trusted without asking the API server again',
  ),
  RELAY_TOKEN_REVIEW_FAILURE_TTL: duration('10s', 'how long a refused token is refused without asking again'),
  RELAY_TOKEN_REVIEW_CACHE_SIZE: int(1000, 10, 100_000, 'token reviews remembered (the oldest are forgotten first)'),
  RELAY_BIND_ADDRESS: str('address the HTTP server listens on', { default: '0.0.0.0', pattern: '^[0-9a-fA-F.:]+$' }),
  RELAY_PROGRESS_BATCH: duration(
    `${BUDGET_DEFAULTS.progressBatchMs / 1000}s`,
    "gap after a run's first progress message; each later gap doubles; at least 100ms",
    100,
  ),
  RELAY_PROGRESS_MAX_GAP: duration(
    `${BUDGET_DEFAULTS.progressMaxGapMs / 1000}s`,
    'longest gap between two progress messages of a run (≥ RELAY_PROGRESS_BATCH)',
  ),
  RELAY_PROGRESS_MESSAGES: int(
    BUDGET_DEFAULTS.progressMessages,
    1,
    100,
    'progress messages one run sends; then *status* has the detail',
  ),
  RELAY_SESSION_MESSAGES: int(
    BUDGET_DEFAULTS.sessionMessages,
    5,
    10_000,
    'messages one Session sends (prompts and the result always get through)',
  ),
  RELAY_DAILY_BUDGET_USD: dollars(COST_DEFAULTS.dailyUsd, 'model spend per phone per day in US dollars; 0: no limit'),
  RELAY_RUN_PAUSE_USD: dollars(
    COST_DEFAULTS.runPauseUsd,
    'a run pauses to ask "continue?" at each multiple of this model spend in US dollars; 0: never',
  ),
  RELAY_BUDGET_TIMEZONE: str('IANA time zone whose midnight starts a new budget day', {
    default: COST_DEFAULTS.timeZone,
  }),
  RELAY_REMINDER_BEFORE: duration('5m', 'approval reminder this long before the timeout'),
  RELAY_SEND_RATE: int(10, 1, 1000, 'outbound messages per second per sender'),
  RELAY_INBOUND_CONCURRENCY: int(
    INBOUND_CONCURRENCY,
    1,
    1024,
    'inbound messages processed at once (more: throughput with a slow API server; fewer: faster webhook acks)',
  ),
  RELAY_JOURNAL_DIR: str('folder of the inbound journal (a volume that survives a container restart)', {
    default: '/var/lib/tether/journal',
  }),
  RELAY_INBOUND_BACKLOG: int(
    2000,
    1,
    1_000_000,
    'recorded messages not yet acted on beyond which webhooks are refused with a "send again" reply',
  ),
  RELAY_CLAIMS_CONFIGMAP: str('ConfigMap holding the idempotency records of messages that create no Session', {
    default: 'tether-message-claims',
    pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
  }),
  RELAY_WINDOW: duration('23h30m', 'after this long without an inbound message, send the template'),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
});
type Env = Static<typeof ENV>;

export interface RelayConfig {
  twilio?: {
    accountSid: string;
    authToken: string;
    from: string;
    apiUrl?: string;
    templateSid?: string;
    buttons: boolean;
  };
  publicUrl: string;
  webhookUrl: string;
  allowedNumbers: Set<string>;
  namespace: string;
  /** Where runner Pods live (their tokens upload media). */
  runnerNamespace: string;
  repo: { url: string; baseBranch: string };
  /** Every repository a phone may pick, the default (repo) first. */
  repos: NamedRepo[];
  /** The controller's repository host list: each of `repos` is on it. */
  repoHosts: string[];
  repoChoicesConfigMap: string;
  timeouts: SessionDefaults['timeouts'];
  maxQueued: number;
  port: number;
  webChat?: { token: string; phone: string };
  media: { signingKey: string; dir: string; ttlMs: number; urlTtlMs: number; maxBytes: number };
  uploads: UploadLimits;
  /** pictures the phone sends, fetched from Twilio */
  inboundImages: { maxBytes: number; timeoutMs: number };
  bindAddress: string;
  /** every secret value this process holds, for the redactor */
  secrets: string[];
  progressBatchMs: number;
  progressMaxGapMs: number;
  progressMessages: number;
  sessionMessages: number;
  cost: CostBudget;
  reminderBeforeMs: number;
  sendRatePerSecond: number;
  inboundConcurrency: number;
  journalDir: string;
  inboundBacklog: number;
  claimsConfigMap: string;
  windowMs: number;
  logLevel: string;
}

export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, reason: string) {
    super(`${variable}: ${reason}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

const ms = (text: string) => (text.endsWith('ms') ? Number(text.slice(0, -2)) : parseDuration(text));

/** What one Session's runner may upload, and how the relay protects itself from everyone else. */
export interface UploadLimits {
  sessionFiles: number;
  sessionBytes: number;
  ratePerMinute: number;
  concurrency: number;
  timeoutMs: number;
  review: { okTtlMs: number; failureTtlMs: number; maxEntries: number };
}

const uploadLimits = (env: Env): UploadLimits => ({
  sessionFiles: Number(env.RELAY_MEDIA_SESSION_FILES),
  sessionBytes: Number(env.RELAY_MEDIA_SESSION_BYTES),
  ratePerMinute: Number(env.RELAY_UPLOAD_RATE),
  concurrency: Number(env.RELAY_UPLOAD_CONCURRENCY),
  timeoutMs: ms(env.RELAY_UPLOAD_TIMEOUT),
  review: {
    okTtlMs: ms(env.RELAY_TOKEN_REVIEW_TTL),
    failureTtlMs: ms(env.RELAY_TOKEN_REVIEW_FAILURE_TTL),
    maxEntries: Number(env.RELAY_TOKEN_REVIEW_CACHE_SIZE),
  },
});

function checkBounds(env: Env): void {
  for (const [name, schema] of Object.entries(ENV.properties) as [
    keyof Env,
    TSchema & { min?: number; max?: number; minMs?: number },
  ][]) {
    const value = env[name];
    if (schema.minMs !== undefined && value !== undefined && ms(value) < schema.minMs) {
      throw new ConfigError(
        name,
        `must be at least ${schema.minMs >= 1000 ? `${schema.minMs / 1000}s` : `${schema.minMs}ms`}, got ${value}`,
      );
    }
    if (schema.min === undefined || value === undefined) continue;
    const n = Number(value);
    if (n < schema.min || n > schema.max!)
      throw new ConfigError(name, `must be between ${schema.min} and ${schema.max}, got ${n}`);
  }
}

/** Budgets that only make sense together, and a time zone this runtime knows. */
function checkBudgets(env: Env): void {
  if (ms(env.RELAY_PROGRESS_MAX_GAP) < ms(env.RELAY_PROGRESS_BATCH)) {
    throw new ConfigError(
      'RELAY_PROGRESS_MAX_GAP',
      `must be at least RELAY_PROGRESS_BATCH (${env.RELAY_PROGRESS_BATCH}), got ${env.RELAY_PROGRESS_MAX_GAP}`,
    );
  }
  try {
    new Intl.DateTimeFormat('en-CA', { timeZone: env.RELAY_BUDGET_TIMEZONE });
  } catch {
    throw new ConfigError(
      'RELAY_BUDGET_TIMEZONE',
      `"${env.RELAY_BUDGET_TIMEZONE.slice(0, 40)}" is not an IANA time zone (e.g. UTC, Europe/Berlin)`,
    );
  }
}

function parseNumbers(list: string): Set<string> {
  const numbers = list
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  for (const n of numbers) {
    if (!new RegExp(E164_PATTERN).test(n))
      throw new ConfigError('ALLOWED_NUMBERS', `"${n.slice(0, 20)}" is not an E.164 number (+14155550123)`);
  }
  return new Set(numbers);
}

function repos(env: Env): NamedRepo[] {
  const first = {
    name: env.TETHER_REPO_NAME ?? nameFromUrl(env.TETHER_REPO_URL),
    url: env.TETHER_REPO_URL,
    baseBranch: env.TETHER_REPO_BASE_BRANCH,
  };
  try {
    return repoList(first, env.TETHER_REPOS);
  } catch (error) {
    throw new ConfigError('TETHER_REPOS', (error as Error).message);
  }
}

function repoHosts(env: Env): string[] {
  try {
    return parseRepoHosts(env.TETHER_REPO_HOSTS);
  } catch (error) {
    throw new ConfigError('TETHER_REPO_HOSTS', (error as Error).message);
  }
}

/** The controller refuses a Session whose repository is not on its host list: refused here at start, before a phone is told "On it". */
function checkRepoHosts(list: NamedRepo[], hosts: string[]): void {
  for (const [i, repo] of list.entries()) {
    if (!repoProblem(repo, hosts)) continue;
    throw new ConfigError(
      i === 0 ? 'TETHER_REPO_URL' : 'TETHER_REPOS',
      `"${repo.name}" (${repo.url}) is not on TETHER_REPO_HOSTS (${hosts.join(', ')}), so the controller would refuse every command on it; add its host or folder to TETHER_REPO_HOSTS, or drop it`,
    );
  }
}

/** Twilio wholly or not at all, and at least one way to reach a phone. */
function checkTransports(env: Env): void {
  const twilioVars = [env.TWILIO_ACCOUNT_SID, env.TWILIO_AUTH_TOKEN, env.TWILIO_WHATSAPP_FROM];
  if (twilioVars.some(Boolean) && !twilioVars.every(Boolean)) {
    const missing = ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_WHATSAPP_FROM'].find((_, i) => !twilioVars[i])!;
    throw new ConfigError(missing, 'required when any Twilio variable is set');
  }
  if (!env.TWILIO_ACCOUNT_SID && !env.RELAY_WEB_CHAT_TOKEN) {
    throw new ConfigError(
      'TWILIO_ACCOUNT_SID',
      'no transport: set the Twilio variables, or RELAY_WEB_CHAT_TOKEN for the web chat',
    );
  }
}

/** Reads and validates the environment; throws ConfigError naming the first bad variable. */
export function loadConfig(source: Record<string, string | undefined> = process.env): RelayConfig {
  const raw: Record<string, string> = {};
  for (const name of Object.keys(ENV.properties)) {
    const value = source[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  const env = Value.Default(ENV, raw) as Env;
  const error = Value.Errors(ENV, env).First();
  if (error) {
    const variable = error.path.replace(/^\//, '') || 'environment';
    const shown =
      variable in raw && !/TOKEN|KEY|SID/.test(variable) ? ` (got "${String(raw[variable]).slice(0, 40)}")` : '';
    throw new ConfigError(
      variable,
      `${error.message}${shown}; expected ${(ENV.properties as Record<string, TSchema>)[variable]?.description ?? 'a valid value'}`,
    );
  }
  checkBounds(env);
  checkBudgets(env);
  checkTransports(env);
  const publicUrl = env.PUBLIC_URL.replace(/\/+$/, '');
  const repoChoices = repos(env);
  const hosts = repoHosts(env);
  checkRepoHosts(repoChoices, hosts);
  return {
    twilio: env.TWILIO_ACCOUNT_SID
      ? {
          accountSid: env.TWILIO_ACCOUNT_SID,
          authToken: env.TWILIO_AUTH_TOKEN!,
          from: env.TWILIO_WHATSAPP_FROM!,
          apiUrl: env.TWILIO_API_URL,
          templateSid: env.TWILIO_TEMPLATE_SID,
          buttons: env.TWILIO_BUTTONS === 'true',
        }
      : undefined,
    publicUrl,
    webhookUrl: `${publicUrl}/webhook`,
    allowedNumbers: parseNumbers(env.ALLOWED_NUMBERS),
    namespace: env.TETHER_NAMESPACE,
    runnerNamespace: env.TETHER_RUNNER_NAMESPACE ?? env.TETHER_NAMESPACE,
    repo: { url: env.TETHER_REPO_URL, baseBranch: env.TETHER_REPO_BASE_BRANCH },
    repos: repoChoices,
    repoHosts: hosts,
    repoChoicesConfigMap: env.RELAY_REPO_CHOICES_CONFIGMAP,
    timeouts: { run: env.TETHER_RUN_TIMEOUT, approval: env.TETHER_APPROVAL_TIMEOUT },
    maxQueued: Number(env.TETHER_MAX_QUEUED),
    port: Number(env.RELAY_PORT),
    webChat: env.RELAY_WEB_CHAT_TOKEN
      ? { token: env.RELAY_WEB_CHAT_TOKEN, phone: env.RELAY_WEB_CHAT_PHONE }
      : undefined,
    media: {
      signingKey: env.RELAY_MEDIA_SIGNING_KEY,
      dir: env.RELAY_MEDIA_DIR,
      ttlMs: ms(env.RELAY_MEDIA_TTL),
      urlTtlMs: ms(env.RELAY_MEDIA_URL_TTL),
      maxBytes: Number(env.RELAY_MEDIA_MAX_BYTES),
    },
    uploads: uploadLimits(env),
    inboundImages: {
      maxBytes: Math.min(Number(env.RELAY_INBOUND_IMAGE_MAX_BYTES), Number(env.RELAY_MEDIA_MAX_BYTES)),
      timeoutMs: ms(env.RELAY_INBOUND_IMAGE_TIMEOUT),
    },
    bindAddress: env.RELAY_BIND_ADDRESS,
    secrets: [env.TWILIO_AUTH_TOKEN, env.RELAY_MEDIA_SIGNING_KEY, env.RELAY_WEB_CHAT_TOKEN].filter(
      (s): s is string => !!s,
    ),
    progressBatchMs: ms(env.RELAY_PROGRESS_BATCH),
    progressMaxGapMs: ms(env.RELAY_PROGRESS_MAX_GAP),
    progressMessages: Number(env.RELAY_PROGRESS_MESSAGES),
    sessionMessages: Number(env.RELAY_SESSION_MESSAGES),
    cost: {
      dailyUsd: Number(env.RELAY_DAILY_BUDGET_USD),
      timeZone: env.RELAY_BUDGET_TIMEZONE,
      runPauseUsd: Number(env.RELAY_RUN_PAUSE_USD),
    },
    reminderBeforeMs: ms(env.RELAY_REMINDER_BEFORE),
    sendRatePerSecond: Number(env.RELAY_SEND_RATE),
    inboundConcurrency: Number(env.RELAY_INBOUND_CONCURRENCY),
    journalDir: env.RELAY_JOURNAL_DIR,
    inboundBacklog: Number(env.RELAY_INBOUND_BACKLOG),
    claimsConfigMap: env.RELAY_CLAIMS_CONFIGMAP,
    windowMs: ms(env.RELAY_WINDOW),
    logLevel: env.LOG_LEVEL,
  };
}
