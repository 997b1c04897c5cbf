// The relay's configuration: the only reader of process.env. Parsed once at start-up;
// a bad value stops the process with a message naming the variable.
import type { Static } from '@sinclair/typebox';
import type { KubeEnvironment } from '../common/kube/kubeconfig.ts';
import { checked, ConfigError, logRenamed, readConfig, type EnvSource } from '../common/config/env.ts';
import { durationMs, renamedOf, timeZone } from '../common/config/values.ts';
import { E164_PATTERN } from '../common/session/patterns.ts';
import { phoneHasher } from '../common/session/phone-hash.ts';
import { parseRepoHosts, repoProblem } from '../common/session/repo.ts';
import { githubConfig } from './config-github.ts';
import { RELAY_ENV } from './config-schema.ts';
import { nameFromUrl, repoList, type NamedRepo } from './repo-list.ts';
import { parsePeople, type Person } from './inbound/people.ts';

export { ConfigError, RELAY_ENV };
type Env = Static<typeof RELAY_ENV>;

/** Old names the relay still reads. */
const RENAMED = renamedOf('LOG_LEVEL', 'RELAY_DAILY_BUDGET_USD', 'RELAY_BUDGET_TIMEZONE');

/** A duration in ms, refused below `minMs`: shorter values break the feature (a timeout nothing can meet). */
function atLeastMs(variable: keyof Env, text: string, minMs: number): number {
  const ms = durationMs(text);
  if (ms < minMs)
    throw new ConfigError(
      variable,
      `must be at least ${minMs >= 1000 ? `${minMs / 1000}s` : `${minMs}ms`}, got ${text}`,
    );
  return ms;
}

/** What one Session's runner may upload, and how the relay protects itself from everyone else. */
const uploadLimits = (env: Env) => ({
  sessionFiles: env.RELAY_MEDIA_SESSION_FILES,
  sessionBytes: env.RELAY_MEDIA_SESSION_BYTES,
  ratePerMinute: env.RELAY_UPLOAD_RATE,
  concurrency: env.RELAY_UPLOAD_CONCURRENCY,
  timeoutMs: atLeastMs('RELAY_UPLOAD_TIMEOUT', env.RELAY_UPLOAD_TIMEOUT, 1000),
  review: {
    okTtlMs: durationMs(env.RELAY_TOKEN_REVIEW_TTL),
    failureTtlMs: durationMs(env.RELAY_TOKEN_REVIEW_FAILURE_TTL),
    maxEntries: env.RELAY_TOKEN_REVIEW_CACHE_SIZE,
  },
});
export type UploadLimits = ReturnType<typeof uploadLimits>;

/** How often a run may speak, and what a phone may spend. */
function budgets(env: Env) {
  const progressBatchMs = atLeastMs('RELAY_PROGRESS_BATCH', env.RELAY_PROGRESS_BATCH, 100);
  const progressMaxGapMs = durationMs(env.RELAY_PROGRESS_MAX_GAP);
  if (progressMaxGapMs < progressBatchMs) {
    throw new ConfigError(
      'RELAY_PROGRESS_MAX_GAP',
      `must be at least RELAY_PROGRESS_BATCH (${env.RELAY_PROGRESS_BATCH}), got ${env.RELAY_PROGRESS_MAX_GAP}`,
    );
  }
  return {
    progressBatchMs,
    progressMaxGapMs,
    progressMessages: env.RELAY_PROGRESS_MESSAGES,
    sessionMessages: env.RELAY_SESSION_MESSAGES,
    cost: {
      dailyUsd: Number(env.TETHER_DAILY_BUDGET_USD),
      timeZone: checked('TETHER_BUDGET_TIMEZONE', () => timeZone(env.TETHER_BUDGET_TIMEZONE)),
      runPauseUsd: Number(env.RELAY_RUN_PAUSE_USD),
    },
    reminderBeforeMs: durationMs(env.RELAY_REMINDER_BEFORE),
    sendRatePerSecond: env.RELAY_SEND_RATE,
    windowMs: durationMs(env.RELAY_WINDOW),
  };
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

/**
 * Every repository a phone may pick, the default first, each on the controller's host list: one
 * the controller would refuse is refused here at start, before a phone is told "On it". The people
 * map's repositories must be on the list.
 */
function repositories(env: Env): { repos: NamedRepo[]; repoHosts: string[]; people?: Person[] } {
  const first = {
    name: env.TETHER_REPO_NAME ?? nameFromUrl(env.TETHER_REPO_URL),
    url: env.TETHER_REPO_URL,
    baseBranch: env.TETHER_REPO_BASE_BRANCH,
  };
  const repos = checked('TETHER_REPOS', () => repoList(first, env.TETHER_REPOS));
  const hosts = checked('TETHER_REPO_HOSTS', () => parseRepoHosts(env.TETHER_REPO_HOSTS));
  for (const [i, repo] of repos.entries()) {
    if (!repoProblem(repo, hosts)) continue;
    throw new ConfigError(
      i === 0 ? 'TETHER_REPO_URL' : 'TETHER_REPOS',
      `"${repo.name}" (${repo.url}) is not on TETHER_REPO_HOSTS (${hosts.join(', ')}), so the controller would ` +
        'refuse every command on it; add its host or folder to TETHER_REPO_HOSTS, or drop it',
    );
  }
  const people =
    env.TETHER_PEOPLE === undefined
      ? undefined
      : checked('TETHER_PEOPLE', () =>
          parsePeople(
            env.TETHER_PEOPLE!,
            repos.map((r) => r.name),
          ),
        );
  return { repos, repoHosts: hosts, people };
}

/** Twilio wholly or not at all, and at least one way to reach a phone. */
function transports(env: Env) {
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
    webChat: env.RELAY_WEB_CHAT_TOKEN
      ? { token: env.RELAY_WEB_CHAT_TOKEN, phone: env.RELAY_WEB_CHAT_PHONE }
      : undefined,
  };
}

function media(env: Env) {
  return {
    media: {
      signingKey: env.RELAY_MEDIA_SIGNING_KEY,
      dir: env.RELAY_MEDIA_DIR,
      ttlMs: durationMs(env.RELAY_MEDIA_TTL),
      urlTtlMs: durationMs(env.RELAY_MEDIA_URL_TTL),
      maxBytes: env.RELAY_MEDIA_MAX_BYTES,
    },
    uploads: uploadLimits(env),
    /** pictures the phone sends, fetched from Twilio */
    inboundImages: {
      maxBytes: Math.min(env.RELAY_INBOUND_IMAGE_MAX_BYTES, env.RELAY_MEDIA_MAX_BYTES),
      timeoutMs: atLeastMs('RELAY_INBOUND_IMAGE_TIMEOUT', env.RELAY_INBOUND_IMAGE_TIMEOUT, 1000),
    },
  };
}

function configFrom(env: Env) {
  const publicUrl = env.PUBLIC_URL.replace(/\/+$/, '');
  return {
    ...transports(env),
    publicUrl,
    webhookUrl: `${publicUrl}/webhook`,
    allowedNumbers: parseNumbers(env.ALLOWED_NUMBERS),
    namespace: env.TETHER_NAMESPACE,
    /** Where runner Pods live (their tokens upload media). */
    runnerNamespace: env.TETHER_RUNNER_NAMESPACE ?? env.TETHER_NAMESPACE,
    repo: { url: env.TETHER_REPO_URL, baseBranch: env.TETHER_REPO_BASE_BRANCH },
    ...repositories(env),
    repoChoicesConfigMap: env.RELAY_REPO_CHOICES_CONFIGMAP,
    pullRequestsConfigMap: env.TETHER_PULL_REQUESTS_CONFIGMAP,
    timeouts: { run: env.TETHER_RUN_TIMEOUT, approval: env.TETHER_APPROVAL_TIMEOUT },
    maxQueued: env.TETHER_MAX_QUEUED,
    port: env.RELAY_PORT,
    ...media(env),
    bindAddress: env.RELAY_BIND_ADDRESS,
    /** every secret value this process holds, for the redactor */
    secrets: [
      env.TWILIO_AUTH_TOKEN,
      env.RELAY_MEDIA_SIGNING_KEY,
      env.RELAY_WEB_CHAT_TOKEN,
      env.TETHER_PHONE_HASH_KEY,
      env.TETHER_GITHUB_WEBHOOK_SECRET,
    ].filter((s): s is string => !!s),
    /** The install's keyed phone hash (its key stays inside). */
    phoneHash: phoneHasher(env.TETHER_PHONE_HASH_KEY),
    ...budgets(env),
    inboundConcurrency: env.RELAY_INBOUND_CONCURRENCY,
    journalDir: env.RELAY_JOURNAL_DIR,
    inboundBacklog: env.RELAY_INBOUND_BACKLOG,
    claimsConfigMap: env.RELAY_CLAIMS_CONFIGMAP,
    githubWebhookSecret: env.TETHER_GITHUB_WEBHOOK_SECRET,
    github: githubConfig(env),
    logLevel: env.TETHER_LOG_LEVEL as string,
  };
}

export type RelayConfig = ReturnType<typeof configFrom>;

/** Reads and validates the environment; throws ConfigError naming the first bad variable. */
export function loadConfig(source: EnvSource = process.env, onRenamed = logRenamed('relay')): RelayConfig {
  return readConfig(RELAY_ENV, source, configFrom, { renamed: RENAMED, onRenamed });
}

/** Where to find the API server (a kubeconfig, or the Pod's service account): not the relay's own settings. */
export const kubeEnvironment = (source: EnvSource = process.env): KubeEnvironment => ({
  KUBECONFIG: source.KUBECONFIG,
  HOME: source.HOME,
  KUBERNETES_SERVICE_HOST: source.KUBERNETES_SERVICE_HOST,
  KUBERNETES_SERVICE_PORT: source.KUBERNETES_SERVICE_PORT,
});
