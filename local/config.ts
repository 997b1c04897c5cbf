// The local stack's settings: the only reader of process.env under local/. `make dev` and the
// test helpers that start the same stack read their environment through here.
import { join, resolve } from 'node:path';
import { Type } from '@sinclair/typebox';
import { checked, logRenamed, readEnv } from '../common/config/env.ts';
import { httpUrl, logLevel, RENAMED, renamedOf } from '../common/config/values.ts';
import { parseRepoHosts } from '../common/session/repo.ts';

export const repoRoot = resolve(import.meta.dirname, '..');

/** The host's PATH and HOME, handed to the processes the local stack starts. */
export function hostEnv(): { PATH: string; HOME: string } {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
}

const set = (name: string): string | undefined => process.env[name] || undefined;

/** Where the local node agent keeps the images it stages, as root (local/node-agent/image-store.ts). */
export const DEFAULT_IMAGE_DIR = '/var/cache/tether/images';
export const imageStoreDir = (): string => resolve(set('TETHER_IMAGE_DIR') ?? DEFAULT_IMAGE_DIR);
const passThrough = (names: string[]) => Object.fromEntries(names.flatMap((n) => (set(n) ? [[n, set(n)!]] : [])));

/**
 * What `make dev` takes from its environment, by component: every setting of the relay and the
 * controller (the names their config.ts reads) except those the stack decides itself
 * (stack-env.ts) and NOT_LOCAL. test/unit/local-config.test.ts holds this against both schemas.
 */
export const DEV_SETTINGS = {
  relay: [
    'TWILIO_ACCOUNT_SID',
    'TWILIO_AUTH_TOKEN',
    'TWILIO_WHATSAPP_FROM',
    'TWILIO_API_URL',
    'TWILIO_TEMPLATE_SID',
    'TWILIO_BUTTONS',
    'PUBLIC_URL',
    'ALLOWED_NUMBERS',
    'RELAY_BIND_ADDRESS',
    'RELAY_WEB_CHAT_PHONE',
    'TETHER_LOG_LEVEL',
    'TETHER_REPO_NAME',
    'TETHER_REPO_BASE_BRANCH',
    'TETHER_REPOS',
    'TETHER_RUN_TIMEOUT',
    'TETHER_APPROVAL_TIMEOUT',
    'TETHER_MAX_QUEUED',
    'RELAY_MEDIA_TTL',
    'RELAY_MEDIA_URL_TTL',
    'RELAY_MEDIA_MAX_BYTES',
    'RELAY_MEDIA_SESSION_FILES',
    'RELAY_MEDIA_SESSION_BYTES',
    'RELAY_UPLOAD_RATE',
    'RELAY_UPLOAD_CONCURRENCY',
    'RELAY_UPLOAD_TIMEOUT',
    'RELAY_INBOUND_IMAGE_MAX_BYTES',
    'RELAY_INBOUND_IMAGE_TIMEOUT',
    'RELAY_TOKEN_REVIEW_TTL',
    'RELAY_TOKEN_REVIEW_FAILURE_TTL',
    'RELAY_TOKEN_REVIEW_CACHE_SIZE',
    'RELAY_PROGRESS_BATCH',
    'RELAY_PROGRESS_MAX_GAP',
    'RELAY_PROGRESS_MESSAGES',
    'RELAY_SESSION_MESSAGES',
    'TETHER_DAILY_BUDGET_USD',
    'RELAY_RUN_PAUSE_USD',
    'TETHER_BUDGET_TIMEZONE',
    'RELAY_REMINDER_BEFORE',
    'RELAY_WINDOW',
    'RELAY_SEND_RATE',
    'RELAY_INBOUND_CONCURRENCY',
    'RELAY_INBOUND_BACKLOG',
    'TETHER_GITHUB_API_URL',
    'TETHER_GITHUB_TOKEN_FILE',
    'TETHER_GITHUB_TIMEOUT',
    'TETHER_GITHUB_POLL_SECONDS',
    'TETHER_GITHUB_POLL_MAX',
    'TETHER_GITHUB_MERGE',
    'TETHER_GITHUB_WEBHOOK_SECRET',
    'TETHER_PEOPLE',
  ],
  controller: [
    'TETHER_RUN_TIMEOUT',
    'TETHER_APPROVAL_TIMEOUT',
    'TETHER_MAX_QUEUED',
    'TETHER_START_TIMEOUT',
    'TETHER_STALL_TIMEOUT',
    'TETHER_POD_TTL',
    'TETHER_RUNNER_KEEP_ALIVE',
    'TETHER_HISTORY_COUNT',
    'TETHER_HISTORY_MAX_AGE',
    'TETHER_CONCURRENCY',
    'TETHER_METRICS_PORT',
    'TETHER_LOG_LEVEL',
    'TETHER_DAILY_BUDGET_USD',
    'TETHER_BUDGET_TIMEZONE',
    'TETHER_RUNNER_PERMISSION_POLICY',
    'TETHER_RUNNER_SERVICE_ACCOUNT_TOKEN_SECONDS',
    'TETHER_TERMINATION_GRACE_SECONDS',
    'TETHER_PVC_SIZE',
    'TETHER_PVC_STORAGE_CLASS',
    'TETHER_RUNNER_CPU_REQUEST',
    'TETHER_RUNNER_MEMORY_REQUEST',
    'TETHER_RUNNER_CPU_LIMIT',
    'TETHER_RUNNER_MEMORY_LIMIT',
    'TETHER_RUNNER_CLAUDE_MODEL',
    'TETHER_RUNNER_ANTHROPIC_BASE_URL',
    'TETHER_RUNNER_HTTPS_PROXY',
    'TETHER_RUNNER_HTTP_PROXY',
    'TETHER_RUNNER_NO_PROXY',
  ],
  // The egress proxy's (egress/config.ts): the agent's list, repository additions, asking; the stack sets the rest
  // (local/egress.ts: its port on loopback, its key, the supervisor's list, the blocked ranges less loopback).
  egress: [
    'TETHER_EGRESS_ALLOW',
    'TETHER_EGRESS_DENY',
    'TETHER_EGRESS_REPOSITORIES',
    'TETHER_EGRESS_ASK',
    'TETHER_EGRESS_ASK_WAIT',
    'TETHER_EGRESS_MAX_CONNECTIONS',
    'TETHER_EGRESS_MAX_WAITING',
    'TETHER_EGRESS_IDLE_TIMEOUT',
    'TETHER_EGRESS_HEADER_TIMEOUT',
    'TETHER_EGRESS_MAX_HEADER_BYTES',
    'TETHER_EGRESS_GRANT_ENTRIES',
    'TETHER_EGRESS_MAX_SESSION_CONNECTIONS',
    'TETHER_EGRESS_MAX_SUPERVISOR_CONNECTIONS',
    'TETHER_EGRESS_MAX_UNAUTHENTICATED',
    'TETHER_EGRESS_UNAUTHENTICATED_TIMEOUT',
    'TETHER_EGRESS_MAX_ASKS',
    'TETHER_EGRESS_FORGE_CACHE',
    'TETHER_LOG_LEVEL',
  ],
} as const;

/** Settings with no meaning on the local stack, and why: make dev neither reads nor sets them. */
export const NOT_LOCAL: Record<string, string> = {
  POD_NAME: 'the controller is no Pod here: its identity is the host name',
  TETHER_LEASE_NAME: 'one controller, no leader election',
  TETHER_RUNNER_RUNTIME_CLASS: 'the node agent runs processes, not containers: there is no runtime to choose',
  TETHER_RUNNER_HOST_NETWORK: "the node agent's processes are on the host's network already",
  TETHER_RUNNER_API_SERVER: "the node agent hands each process the API server's address",
  TETHER_RUNNER_PRIORITY_CLASS: 'no scheduler: the node agent runs every Pod at once',
  TETHER_RUNNER_NODE_SELECTOR: 'one node: the node agent runs every Pod',
  TETHER_RUNNER_TOLERATIONS: 'one node: the node agent runs every Pod',
  TETHER_RUNNER_AFFINITY: 'one node: the node agent runs every Pod',
  TETHER_RUNNER_TOPOLOGY_SPREAD: 'one node: the node agent runs every Pod',
  TETHER_RUNNER_POD_LABELS: 'no NetworkPolicy or monitoring reads labels on the local stack',
  TETHER_RUNNER_UID: "the node agent maps a Pod's ids into a host range of its own; the defaults are kept",
  TETHER_RUNNER_AGENT_UID: "the node agent maps a Pod's ids into a host range of its own; the defaults are kept",
  TETHER_RUNNER_GID: "the node agent maps a Pod's ids into a host range of its own; the defaults are kept",
  RELAY_REPO_CHOICES_CONFIGMAP: "the default name, in the stack's own namespace",
  RELAY_CLAIMS_CONFIGMAP: "the default name, in the stack's own namespace",
  TETHER_PULL_REQUESTS_CONFIGMAP: "the default name, in the stack's own namespace",
  TETHER_GITHUB_APP_ID: 'TETHER_DEV_GITHUB_APP=true makes the stand-in an App and gives the controller its id',
  TETHER_GITHUB_APP_INSTALLATION_ID: "TETHER_DEV_GITHUB_APP=true: the stand-in's installation",
  TETHER_GITHUB_APP_PRIVATE_KEY_FILE: 'TETHER_DEV_GITHUB_APP=true: a key file made for the controller alone',
  TETHER_GITHUB_RELAY_SECRET: "the relay reads the stand-in's token from a file the stack writes",
  TETHER_EGRESS_GRANTS: "the default name, in the stack's own namespace",
};

export interface DevConfig {
  stateDir: string;
  imageStore: string;
  logLevel: string;
  githubApiUrl?: string;
  /** Against the stand-in: an App for the controller (installation tokens) instead of the fixed token alone. */
  githubApp: boolean;
  repoUrl?: string;
  relayPort: number;
  relayEnv: Record<string, string>;
  controllerEnv: Record<string, string>;
  /** The egress proxy's settings make dev passes on (the agent's list, …). */
  egressEnv: Record<string, string>;
  /** Repository host list entries besides the repositories' own. */
  repoHosts: string[];
  runnerSecrets: Record<string, string>;
}

/** `make dev`'s own variables (the relay's and the controller's pass through as DEV_SETTINGS). */
export const DEV_ENV = Type.Object({
  TETHER_DEV_PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535, description: "the relay's port" }),
  TETHER_STATE_DIR: Type.String({ default: join(repoRoot, '.tether-state'), description: "the stack's folder" }),
  TETHER_LOG_LEVEL: logLevel(),
  GITHUB_API_URL: Type.Optional(httpUrl('GitHub REST API base URL')),
  TETHER_REPO_URL: Type.Optional(Type.String({ minLength: 1, description: 'the default repository' })),
  TETHER_REPO_HOSTS: Type.Optional(Type.String({ minLength: 1, description: 'more repository hosts' })),
  TETHER_DEV_GITHUB_APP: Type.Boolean({
    default: false,
    description: 'the controller mints installation tokens from a GitHub App of the stand-in',
  }),
});

/** The variables make dev passes on, each under its name now (an old name still works, with a warning). */
function passed(names: readonly string[], onRenamed: (old: string, current: string) => void): Record<string, string> {
  const byCurrent = new Map(Object.entries(RENAMED).map(([old, current]) => [current as string, old]));
  const out: Record<string, string> = {};
  for (const name of names) {
    const old = byCurrent.get(name);
    if (!set(name) && old && set(old)) onRenamed(old, name);
    const value = set(name) ?? (old ? set(old) : undefined);
    if (value) out[name] = value;
  }
  return out;
}

/** `make dev`'s variables; empty ones count as unset. */
export function loadDevConfig(onRenamed = logRenamed('dev')): DevConfig {
  const env = readEnv(DEV_ENV, process.env, { renamed: renamedOf('LOG_LEVEL') });
  return {
    stateDir: resolve(env.TETHER_STATE_DIR),
    imageStore: imageStoreDir(),
    logLevel: env.TETHER_LOG_LEVEL,
    githubApiUrl: env.GITHUB_API_URL,
    githubApp: env.TETHER_DEV_GITHUB_APP,
    repoUrl: env.TETHER_REPO_URL,
    relayPort: env.TETHER_DEV_PORT,
    relayEnv: passed(DEV_SETTINGS.relay, onRenamed),
    controllerEnv: passed(DEV_SETTINGS.controller, () => {}),
    egressEnv: passed(DEV_SETTINGS.egress, () => {}),
    repoHosts: env.TETHER_REPO_HOSTS ? checked('TETHER_REPO_HOSTS', () => parseRepoHosts(env.TETHER_REPO_HOSTS!)) : [],
    runnerSecrets: passThrough(['ANTHROPIC_API_KEY', 'GITHUB_TOKEN']),
  };
}

/** The whole environment, for the control plane's own processes (they inherit it as they would from a shell). */
export const inheritedEnv = (): NodeJS.ProcessEnv => process.env;
