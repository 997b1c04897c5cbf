// The runner's configuration: the only reader of process.env. Parsed once at start-up;
// a bad value stops the process with a message naming the variable.
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { KubeEnvironment } from '../common/kube/kubeconfig.ts';
import { RUNNER_GIT_STORE } from '../common/session/names.ts';
import { DEFAULT_REPO_HOSTS, parseRepoHosts } from '../common/session/repo.ts';
import { isInside } from './workspace/paths.ts';

const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$';
const url = (description: string) => Type.String({ pattern: '^https?://[^\\s]+$', description });

export const EnvSchema = Type.Object({
  TETHER_SESSION_NAME: Type.String({ minLength: 1, maxLength: 253, pattern: DNS_SUBDOMAIN }),
  TETHER_SESSION_NAMESPACE: Type.String({ minLength: 1, maxLength: 63, pattern: DNS_SUBDOMAIN }),
  TETHER_WORKSPACE: Type.String({ minLength: 1, pattern: '^/', default: '/workspace' }),
  TETHER_AGENT_HOME: Type.String({
    minLength: 1,
    pattern: '^/',
    default: '/workspace/home',
    description:
      "the agent's HOME (Claude Code's config and conversations), on the workspace; the runner's own HOME is private",
  }),
  TETHER_GIT_STORE: Type.String({
    minLength: 1,
    pattern: '^/',
    default: RUNNER_GIT_STORE,
    description: "the runner's private git store, outside the workspace",
  }),
  TETHER_RELAY_URL: Type.Optional(url('relay base URL for media uploads')),
  TETHER_RELAY_TOKEN_FILE: Type.String({ minLength: 1, default: '/var/run/secrets/tether/relay/token' }),
  GITHUB_API_URL: url('GitHub REST API base URL'),
  TETHER_REPO_HOSTS: Type.String({
    minLength: 1,
    default: DEFAULT_REPO_HOSTS.join(','),
    description: "the install's repository host list (from the controller)",
  }),
  GITHUB_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  ANTHROPIC_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  ANTHROPIC_BASE_URL: Type.Optional(
    url("a Messages API other than Anthropic's (a gateway, or a scripted model a test runs)"),
  ),
  TETHER_CLAUDE_MODEL: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9._:@/-]+$', default: 'claude-sonnet-4-5' }),
  HTTPS_PROXY: Type.Optional(Type.String({ minLength: 1 })),
  HTTP_PROXY: Type.Optional(Type.String({ minLength: 1 })),
  NO_PROXY: Type.Optional(Type.String({ minLength: 1 })),
  TETHER_PERMISSION_POLICY: Type.Optional(Type.String({ minLength: 2, description: 'JSON permission policy' })),
  TETHER_AGENT_SOCKET: Type.Optional(
    Type.String({
      minLength: 2,
      pattern: '^/',
      description: "the agent channel's Unix socket: Claude Code runs in the agent container",
    }),
  ),
  TETHER_CLAUDE_PATH: Type.Optional(Type.String({ minLength: 1, pattern: '^/' })),
  TETHER_GIT_AUTHOR: Type.String({
    minLength: 3,
    pattern: '^[^<>]+ <[^<>@\\s]+@[^<>\\s]+>$',
    default: 'Tether <tether@users.noreply.github.com>',
  }),
  LOG_LEVEL: Type.Union([Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')], {
    default: 'info',
  }),
  PATH: Type.String({ default: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' }),
  KUBECONFIG: Type.Optional(
    Type.String({ description: 'kubeconfig file (local runs); in a Pod the service account is used' }),
  ),
  KUBERNETES_SERVICE_HOST: Type.Optional(Type.String()),
  KUBERNETES_SERVICE_PORT: Type.Optional(Type.String({ pattern: '^[0-9]+$' })),
});
export type Env = Static<typeof EnvSchema>;

export interface RunnerConfig {
  session: { name: string; namespace: string };
  workspace: string;
  /** The agent's checkout, relative to the workspace. */
  checkout: string;
  repoDir: string;
  home: string;
  /** The runner's private folder for git (object store, git's HOME): never on the agent's volume. */
  gitStore: string;
  /** Pictures kept when there is no relay: in the private folder, never on the agent's volume. */
  mediaDir: string;
  relay?: { url: string; tokenFile: string };
  github: { apiUrl: string; token?: string };
  /** Hosts (host[:port]) and local folders the Session's repository may be on. */
  repoHosts: string[];
  anthropicApiKey?: string;
  /** Where model calls go (the real API unless a gateway is configured). */
  anthropicBaseUrl: string;
  /** Set: Claude Code runs in the agent container, started through the agent channel on this socket. */
  agentSocket?: string;
  /** No API key and no other Messages API: Claude Code talks to the scripted model on loopback. */
  scriptedModel: boolean;
  /** The model Claude Code runs (pinned). */
  model: string;
  policyJson?: string;
  /** Claude Code's binary; unset: the one in the Agent SDK's platform package. */
  claudePath?: string;
  gitAuthor: { name: string; email: string };
  logLevel: Env['LOG_LEVEL'];
  /** What Claude Code may see: never GITHUB_TOKEN. Its config and transcripts live in HOME (the volume). */
  agentEnv: Record<string, string>;
  /** Values that must never leave the process (status, logs, images). */
  secrets: string[];
  /** Where to find the API server and credentials. */
  kube: KubeEnvironment;
}

export class ConfigError extends Error {}

/** The agent's checkout, below the workspace. */
const CHECKOUT = 'repo';

/** The key Claude Code is given for a Messages API that needs none (any non-empty value works). */
export const SCRIPTED_MODEL_KEY = 'scripted-model';
export const ANTHROPIC_API_URL = 'https://api.anthropic.com';

/** Claude Code's environment pointed at a model endpoint on loopback (the scripted model, or the key-adding proxy), with a dummy key. */
export function loopbackModelEnv(agentEnv: Record<string, string>, url: string): Record<string, string> {
  return { ...agentEnv, ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: SCRIPTED_MODEL_KEY };
}

function repoHosts(text: string): string[] {
  try {
    return parseRepoHosts(text);
  } catch (error) {
    throw new ConfigError(`invalid TETHER_REPO_HOSTS: ${(error as Error).message}`);
  }
}

/** Parses an environment; throws ConfigError naming the first bad variable. */
export function parseConfig(env: Record<string, string | undefined>): RunnerConfig {
  const known = Object.fromEntries(
    Object.keys(EnvSchema.properties).flatMap((k) => (env[k] === undefined || env[k] === '' ? [] : [[k, env[k]]])),
  );
  if (!known.GITHUB_API_URL) known.GITHUB_API_URL = 'https://api.github.com';
  const withDefaults = Value.Default(EnvSchema, known) as Env;
  const error = Value.Errors(EnvSchema, withDefaults).First();
  if (error) {
    const variable = error.path.replace(/^\//, '') || 'environment';
    const shown =
      variable in withDefaults && !/TOKEN|KEY/.test(variable)
        ? ` (got "${String(withDefaults[variable as keyof Env])}")`
        : '';
    throw new ConfigError(`invalid ${variable}${shown}: ${error.message}`);
  }
  const e = withDefaults;
  if (isInside(e.TETHER_WORKSPACE, e.TETHER_GIT_STORE)) {
    throw new ConfigError(
      `invalid TETHER_GIT_STORE (got "${e.TETHER_GIT_STORE}"): it must be outside TETHER_WORKSPACE, which the agent can write`,
    );
  }
  if (!isInside(e.TETHER_WORKSPACE, e.TETHER_AGENT_HOME)) {
    throw new ConfigError(
      `invalid TETHER_AGENT_HOME (got "${e.TETHER_AGENT_HOME}"): it must be inside TETHER_WORKSPACE, where the agent keeps its conversations`,
    );
  }
  const author = /^(.+) <(.+)>$/.exec(e.TETHER_GIT_AUTHOR)!;
  const agentEnv: Record<string, string> = {
    PATH: e.PATH,
    HOME: e.TETHER_AGENT_HOME,
    CLAUDE_CONFIG_DIR: `${e.TETHER_AGENT_HOME.replace(/\/$/, '')}/.claude`,
    LANG: 'C.UTF-8',
    // No telemetry, update checks or other calls besides the model's: the Pod talks to the API only.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
  };
  for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'HTTPS_PROXY', 'HTTP_PROXY'] as const) {
    if (e[name]) agentEnv[name] = e[name];
  }
  // Loopback (the scripted model, a dev server) never goes through a proxy.
  if (e.HTTPS_PROXY || e.HTTP_PROXY || e.NO_PROXY)
    agentEnv.NO_PROXY = [e.NO_PROXY, '127.0.0.1', 'localhost'].filter(Boolean).join(',');
  if (e.ANTHROPIC_BASE_URL && !e.ANTHROPIC_API_KEY) agentEnv.ANTHROPIC_API_KEY = SCRIPTED_MODEL_KEY;
  return {
    session: { name: e.TETHER_SESSION_NAME, namespace: e.TETHER_SESSION_NAMESPACE },
    workspace: e.TETHER_WORKSPACE,
    checkout: CHECKOUT,
    repoDir: `${e.TETHER_WORKSPACE.replace(/\/$/, '')}/${CHECKOUT}`,
    home: e.TETHER_AGENT_HOME,
    gitStore: e.TETHER_GIT_STORE,
    mediaDir: `${e.TETHER_GIT_STORE.replace(/\/$/, '')}/media`,
    relay: e.TETHER_RELAY_URL
      ? { url: e.TETHER_RELAY_URL.replace(/\/$/, ''), tokenFile: e.TETHER_RELAY_TOKEN_FILE }
      : undefined,
    github: { apiUrl: e.GITHUB_API_URL.replace(/\/$/, ''), token: e.GITHUB_TOKEN },
    repoHosts: repoHosts(e.TETHER_REPO_HOSTS),
    anthropicApiKey: e.ANTHROPIC_API_KEY,
    anthropicBaseUrl: (e.ANTHROPIC_BASE_URL ?? ANTHROPIC_API_URL).replace(/\/$/, ''),
    agentSocket: e.TETHER_AGENT_SOCKET,
    scriptedModel: !e.ANTHROPIC_API_KEY && !e.ANTHROPIC_BASE_URL,
    model: e.TETHER_CLAUDE_MODEL,
    policyJson: e.TETHER_PERMISSION_POLICY,
    claudePath: e.TETHER_CLAUDE_PATH,
    gitAuthor: { name: author[1]!, email: author[2]! },
    logLevel: e.LOG_LEVEL,
    agentEnv,
    secrets: [e.GITHUB_TOKEN, e.ANTHROPIC_API_KEY].filter((s): s is string => !!s && s.length >= 4),
    kube: {
      KUBECONFIG: e.KUBECONFIG,
      inClusterOnly: true,
      KUBERNETES_SERVICE_HOST: e.KUBERNETES_SERVICE_HOST,
      KUBERNETES_SERVICE_PORT: e.KUBERNETES_SERVICE_PORT,
    },
  };
}

export function loadConfig(): RunnerConfig {
  return parseConfig(process.env);
}
