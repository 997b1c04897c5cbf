// The environment the local stack gives the relay and the controller: what the stack decides
// itself (namespaces, ports, folders, the runner image and Secret), the repository host list both
// read (every repository the relay is given, as the chart derives it), and then the settings a
// caller passes (`make dev`'s are config.ts DEV_SETTINGS), which win.
import { join } from 'node:path';
import { DEFAULT_BASE_BRANCH } from '../common/session/defaults.ts';
import { nameFromUrl, repoList } from '../relay/repo-list.ts';
import { hostEnv } from './config.ts';
import type { LocalEgress } from './egress.ts';

/** The runner Secret the stack creates in the runner namespace and names to the controller. */
export const RUNNER_SECRET = 'tether-runner';

export interface StackEnvInput {
  kubeconfig: string;
  namespace: string;
  runnerNamespace: string;
  stateDir: string;
  /** The default repository (the relay's TETHER_REPO_URL). */
  repoUrl: string;
  githubApiUrl: string;
  relayUrl: string;
  relayPort: number;
  chatToken: string;
  mediaSigningKey: string;
  /** TETHER_PHONE_HASH_KEY of both the relay and the controller. */
  phoneHashKey: string;
  /** The controller's metrics port unless the caller's settings name one. */
  metricsPort: number;
  /** Entries for the repository host list besides the repositories' own (as the chart's controller.repositoryHosts). */
  repoHosts?: string[];
  /** How long a runner Pod stays live for the phone's next command (TETHER_RUNNER_KEEP_ALIVE; '0' = off). */
  keepAlive?: string;
  relayEnv?: Record<string, string>;
  controllerEnv?: Record<string, string>;
  github?: StackGitHub;
  /** The stack's egress proxy: the controller hands each runner its URL and a credential from its key. */
  egress: LocalEgress;
}

/** The GitHub settings the stack gives its components (the chart's `github.*` values). */
export interface StackGitHub {
  /** The relay's GitHub token, in a file it reads at each call (TETHER_GITHUB_TOKEN_FILE). */
  relayTokenFile?: string;
  /** The secret GitHub signs the relay's webhook deliveries with (TETHER_GITHUB_WEBHOOK_SECRET). */
  webhookSecret?: string;
  /** A GitHub App the controller mints installation tokens with (TETHER_GITHUB_APP_*). */
  app?: { id: number; installationId: number; privateKeyFile: string };
}

function relayGitHub(input: StackEnvInput): Record<string, string> {
  const github = input.github ?? {};
  return {
    TETHER_GITHUB_API_URL: input.githubApiUrl,
    ...(github.relayTokenFile ? { TETHER_GITHUB_TOKEN_FILE: github.relayTokenFile } : {}),
    ...(github.webhookSecret ? { TETHER_GITHUB_WEBHOOK_SECRET: github.webhookSecret } : {}),
  };
}

function controllerGitHub(input: StackEnvInput): Record<string, string> {
  const app = input.github?.app;
  return app
    ? {
        TETHER_GITHUB_APP_ID: String(app.id),
        TETHER_GITHUB_APP_INSTALLATION_ID: String(app.installationId),
        TETHER_GITHUB_APP_PRIVATE_KEY_FILE: app.privateKeyFile,
      }
    : {};
}

/** The host list entry that allows a repository: its folder, or its host[:port]. */
function repoHostOf(url: string): string {
  return url.startsWith('/') ? url : new URL(url).host;
}

/**
 * The repository host list of the stack: the host (or folder) of every repository the relay is
 * given — its TETHER_REPO_URL and TETHER_REPOS, read as the relay reads them — then `more`.
 * Throws "TETHER_REPOS: …" on a list the relay would refuse.
 */
export function stackRepoHosts(repoUrl: string, relayEnv: Record<string, string> = {}, more: string[] = []): string {
  const first = {
    name: relayEnv.TETHER_REPO_NAME ?? nameFromUrl(repoUrl),
    url: repoUrl,
    baseBranch: DEFAULT_BASE_BRANCH,
  };
  let repos;
  try {
    repos = repoList(first, relayEnv.TETHER_REPOS);
  } catch (error) {
    throw new Error(`TETHER_REPOS: ${(error as Error).message}`, { cause: error });
  }
  return [...new Set([...repos.map((r) => repoHostOf(r.url)), ...more])].join(',');
}

/** The relay's budget and time zone, given to the controller too: one value for both, as the chart does. */
function sharedBudget(relayEnv: Record<string, string>): Record<string, string> {
  return {
    ...(relayEnv.TETHER_DAILY_BUDGET_USD ? { TETHER_DAILY_BUDGET_USD: relayEnv.TETHER_DAILY_BUDGET_USD } : {}),
    ...(relayEnv.TETHER_BUDGET_TIMEZONE ? { TETHER_BUDGET_TIMEZONE: relayEnv.TETHER_BUDGET_TIMEZONE } : {}),
  };
}

export function stackEnv(input: StackEnvInput): { relay: Record<string, string>; controller: Record<string, string> } {
  const relayEnv = input.relayEnv ?? {};
  const base = {
    ...hostEnv(),
    KUBECONFIG: input.kubeconfig,
    TETHER_NAMESPACE: input.namespace,
    TETHER_RUNNER_NAMESPACE: input.runnerNamespace,
    TETHER_PHONE_HASH_KEY: input.phoneHashKey,
  };
  const repoHosts = stackRepoHosts(input.repoUrl, relayEnv, input.repoHosts);
  return {
    controller: {
      ...base,
      TETHER_RUNNER_IMAGE: 'tether-runner:local',
      TETHER_RUNNER_SECRET: RUNNER_SECRET,
      TETHER_RELAY_URL: input.relayUrl,
      GITHUB_API_URL: input.githubApiUrl,
      TETHER_METRICS_PORT: String(input.metricsPort),
      TETHER_METRICS_ADDRESS: '127.0.0.1',
      TETHER_LEADER_ELECTION: 'false',
      TETHER_PVC_SIZE: '1Gi',
      TETHER_TERMINATION_GRACE_SECONDS: '10',
      TETHER_REPO_HOSTS: repoHosts,
      TETHER_EGRESS_URL: input.egress.url,
      TETHER_EGRESS_KEY: input.egress.key,
      ...(input.keepAlive ? { TETHER_RUNNER_KEEP_ALIVE: input.keepAlive } : {}),
      ...sharedBudget(relayEnv),
      ...controllerGitHub(input),
      ...input.controllerEnv,
    },
    relay: {
      ...base,
      PUBLIC_URL: input.relayUrl,
      RELAY_PORT: String(input.relayPort),
      TETHER_REPO_URL: input.repoUrl,
      TETHER_REPO_HOSTS: repoHosts,
      RELAY_WEB_CHAT_TOKEN: input.chatToken,
      RELAY_MEDIA_SIGNING_KEY: input.mediaSigningKey,
      RELAY_MEDIA_DIR: join(input.stateDir, 'media'),
      RELAY_JOURNAL_DIR: join(input.stateDir, 'journal'),
      // Loopback unless the caller's settings say otherwise (a tunnel reaches loopback too).
      RELAY_BIND_ADDRESS: '127.0.0.1',
      ...relayGitHub(input),
      ...relayEnv,
    },
  };
}
