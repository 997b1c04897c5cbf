// Every variable the relay reads, with its rule and default (relay/config.ts reads them).
import { Type } from '@sinclair/typebox';
import { duration, logLevel, namespaceName, phoneHashKey, sessionDuration } from '../common/config/values.ts';
import { COST_DEFAULTS } from '../common/session/budget.ts';
import { DEFAULT_BASE_BRANCH, MAX_QUEUED_CEILING, SESSION_DEFAULTS } from '../common/session/defaults.ts';
import { REPO_NAME_MAX_LENGTH, REPO_NAME_PATTERN } from '../common/session/names.ts';
import { DNS_SUBDOMAIN_PATTERN, E164_PATTERN } from '../common/session/patterns.ts';
import { BRANCH_PATTERN, DEFAULT_REPO_HOSTS, REPO_URL_PATTERN } from '../common/session/repo.ts';
import { LIMITS } from '../common/session/schema.ts';
import { GITHUB_ENV } from './config-github.ts';
import { BUDGET_DEFAULTS, INBOUND_CONCURRENCY } from './defaults.ts';

const str = (description: string, extra: object = {}) => Type.String({ minLength: 1, description, ...extra });
const dollars = (fallback: number, description: string) =>
  Type.String({ pattern: '^[0-9]{1,6}(\\.[0-9]{1,2})?$', default: String(fallback), description });
const int = (fallback: number, minimum: number, maximum: number, description: string) =>
  Type.Integer({ default: fallback, minimum, maximum, description });
const configMap = (fallback: string, description: string) =>
  str(description, { default: fallback, pattern: DNS_SUBDOMAIN_PATTERN });
const seconds = (ms: number) => `${ms / 1000}s`;
const optional = Type.Optional;

const TWILIO = {
  TWILIO_ACCOUNT_SID: optional(
    str('Twilio account SID; absent → web transport only', { pattern: '^AC[0-9a-fA-F]{32}$' }),
  ),
  TWILIO_AUTH_TOKEN: optional(str('Twilio auth token (webhook signatures and the REST API)')),
  TWILIO_WHATSAPP_FROM: optional(str('sender, whatsapp:+1…', { pattern: `^whatsapp:\\+[1-9][0-9]{6,14}$` })),
  TWILIO_API_URL: optional(str('base URL of the Messages API (tests: a local fake)', { pattern: '^https?://' })),
  TWILIO_TEMPLATE_SID: optional(
    str('content template for messages outside the 24-hour window', { pattern: '^HX[0-9a-fA-F]{32}$' }),
  ),
  TWILIO_BUTTONS: Type.Union([Type.Literal('true'), Type.Literal('false')], {
    default: 'true',
    description: 'requests carry WhatsApp quick-reply buttons (Content API templates the relay creates)',
  }),
};

const SESSIONS = {
  TETHER_NAMESPACE: namespaceName('namespace of the Session objects', 'tether'),
  TETHER_RUNNER_NAMESPACE: optional(
    namespaceName('namespace of runner Pods (media uploads); absent → TETHER_NAMESPACE'),
  ),
  TETHER_REPO_URL: str('git remote for new Sessions', { pattern: REPO_URL_PATTERN }),
  TETHER_REPO_BASE_BRANCH: str('base branch for new Sessions', {
    default: DEFAULT_BASE_BRANCH,
    pattern: BRANCH_PATTERN,
  }),
  TETHER_REPO_NAME: optional(
    str('short name of TETHER_REPO_URL for the phone (@name, repo name); absent → its last path segment', {
      maxLength: REPO_NAME_MAX_LENGTH,
      pattern: REPO_NAME_PATTERN,
    }),
  ),
  TETHER_REPOS: optional(str('more repositories as JSON: [{"name":"web","url":"https://…","baseBranch":"main"}]')),
  TETHER_REPO_HOSTS: str(
    "the install's repository host list, the controller's: hosts (host[:port]) and folders every repository must be on",
    { default: DEFAULT_REPO_HOSTS.join(',') },
  ),
  RELAY_REPO_CHOICES_CONFIGMAP: configMap('tether-repo-choices', "ConfigMap holding each phone's default repository"),
  TETHER_PULL_REQUESTS_CONFIGMAP: configMap(
    'tether-pull-requests',
    "ConfigMap of the pull requests Tether opened for phones (a phone's next command continues its open one)",
  ),
  TETHER_PEOPLE: optional(
    str(
      'who each phone is, as JSON: [{"phone":"+1…","name":"Ada","email":"ada@…","github":"ada","repos":["web"],' +
        '"merge":true}]; repos limits the repositories (absent: all), merge allows *merge* from the phone',
    ),
  ),
  TETHER_RUN_TIMEOUT: sessionDuration(SESSION_DEFAULTS.timeouts.run, 'spec.timeouts.run of new Sessions'),
  TETHER_APPROVAL_TIMEOUT: sessionDuration(
    SESSION_DEFAULTS.timeouts.approval,
    'spec.timeouts.approval of new Sessions',
  ),
  TETHER_MAX_QUEUED: int(SESSION_DEFAULTS.maxQueued, 0, MAX_QUEUED_CEILING, 'commands a phone may have waiting'),
};

const MEDIA = {
  TETHER_PHONE_HASH_KEY: phoneHashKey(),
  RELAY_MEDIA_SIGNING_KEY: str('HMAC key for media URLs (≥ 32 characters)', { minLength: 32 }),
  RELAY_MEDIA_DIR: str('folder for uploaded media', { default: '/var/lib/tether/media' }),
  RELAY_MEDIA_TTL: duration('24h', 'how long uploaded media is kept'),
  RELAY_MEDIA_URL_TTL: duration('10m', 'lifetime of a signed media URL'),
  RELAY_MEDIA_MAX_BYTES: int(LIMITS.mediaBytes, 1024, LIMITS.mediaBytes, 'largest accepted upload'),
  RELAY_MEDIA_SESSION_FILES: int(100, 1, 1000, 'files a Session may keep in the media store'),
  RELAY_MEDIA_SESSION_BYTES: int(50 * 1024 * 1024, 1024, 1024 * 1024 * 1024, 'bytes a Session may keep there'),
  RELAY_UPLOAD_RATE: int(30, 1, 10_000, 'uploads per minute per source address and per runner (429 above)'),
  RELAY_UPLOAD_CONCURRENCY: int(4, 1, 64, 'uploads read at once (503 above); memory ≤ this × RELAY_MEDIA_MAX_BYTES'),
  RELAY_UPLOAD_TIMEOUT: duration('30s', 'time an authorized upload may take to arrive; at least 1s'),
  RELAY_INBOUND_IMAGE_MAX_BYTES: int(LIMITS.imageBytes, 1024, LIMITS.imageBytes, 'largest picture from the phone'),
  RELAY_INBOUND_IMAGE_TIMEOUT: duration('30s', 'time one picture may take to arrive from Twilio; at least 1s'),
  RELAY_TOKEN_REVIEW_TTL: duration('30s', 'how long an accepted runner token is trusted without asking again'),
  RELAY_TOKEN_REVIEW_FAILURE_TTL: duration('10s', 'how long a refused token is refused without asking again'),
  RELAY_TOKEN_REVIEW_CACHE_SIZE: int(1000, 10, 100_000, 'token reviews remembered (the oldest are forgotten first)'),
};

const BUDGETS = {
  RELAY_PROGRESS_BATCH: duration(
    seconds(BUDGET_DEFAULTS.progressBatchMs),
    "gap after a run's first progress message; each later gap doubles; at least 100ms",
  ),
  RELAY_PROGRESS_MAX_GAP: duration(
    seconds(BUDGET_DEFAULTS.progressMaxGapMs),
    'longest gap between two progress messages of a run (≥ RELAY_PROGRESS_BATCH)',
  ),
  RELAY_PROGRESS_MESSAGES: int(BUDGET_DEFAULTS.progressMessages, 1, 100, 'progress messages one run sends'),
  RELAY_SESSION_MESSAGES: int(BUDGET_DEFAULTS.sessionMessages, 5, 10_000, 'messages one Session sends'),
  TETHER_DAILY_BUDGET_USD: dollars(COST_DEFAULTS.dailyUsd, 'model spend per phone per day in US dollars; 0: none'),
  RELAY_RUN_PAUSE_USD: dollars(
    COST_DEFAULTS.runPauseUsd,
    'a run pauses to ask "continue?" at each multiple of this model spend in US dollars; 0: never',
  ),
  TETHER_BUDGET_TIMEZONE: str('IANA time zone whose midnight starts a new budget day', {
    default: COST_DEFAULTS.timeZone,
  }),
  RELAY_REMINDER_BEFORE: duration('5m', 'approval reminder this long before the timeout'),
  RELAY_SEND_RATE: int(10, 1, 1000, 'outbound messages per second per sender'),
  RELAY_WINDOW: duration('23h30m', 'after this long without an inbound message, send the template'),
};

const INBOUND = {
  RELAY_INBOUND_CONCURRENCY: int(INBOUND_CONCURRENCY, 1, 1024, 'inbound messages processed at once'),
  RELAY_JOURNAL_DIR: str('folder of the inbound journal (a volume that survives a container restart)', {
    default: '/var/lib/tether/journal',
  }),
  RELAY_INBOUND_BACKLOG: int(2000, 1, 1_000_000, 'recorded messages not yet acted on before webhooks are refused'),
  RELAY_CLAIMS_CONFIGMAP: configMap('tether-message-claims', 'ConfigMap of the idempotency records'),
  TETHER_GITHUB_WEBHOOK_SECRET: optional(
    str('secret of the GitHub webhook (X-Hub-Signature-256); absent → POST /github/webhook answers 404', {
      minLength: 16,
    }),
  ),
};

export const RELAY_ENV = Type.Object({
  ...TWILIO,
  PUBLIC_URL: str('public base URL of the relay; the webhook is PUBLIC_URL/webhook', {
    pattern: '^https?://[^/?#]+(/[^?#]*)?$',
  }),
  ALLOWED_NUMBERS: Type.String({ default: '', description: 'comma-separated E.164 allowlist' }),
  ...SESSIONS,
  RELAY_PORT: int(8080, 1, 65535, 'HTTP port'),
  RELAY_BIND_ADDRESS: str('address the HTTP server listens on', { default: '0.0.0.0', pattern: '^[0-9a-fA-F.:]+$' }),
  RELAY_WEB_CHAT_TOKEN: optional(str('token for /chat; absent → web chat disabled', { minLength: 16 })),
  RELAY_WEB_CHAT_PHONE: str('E.164 identity of the web chat user', { default: '+15555550100', pattern: E164_PATTERN }),
  ...MEDIA,
  ...BUDGETS,
  ...INBOUND,
  ...GITHUB_ENV,
  TETHER_LOG_LEVEL: logLevel(),
});
