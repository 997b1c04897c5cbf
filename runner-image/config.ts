// The runner's configuration: the only reader of process.env. Parsed once at start-up;
// a bad value stops the process with a message naming the variable.
import { Type, type Static } from '@sinclair/typebox';
import { checked, ConfigError, logRenamed, readConfig, type EnvSource } from '../common/config/env.ts';
import { claudeModel, httpUrl, logLevel, noProxyList, proxyUrl, renamedOf } from '../common/config/values.ts';
import { DNS_SUBDOMAIN_PATTERN } from '../common/session/patterns.ts';
import { RUNNER_GIT_STORE } from '../common/session/names.ts';
import { DEFAULT_REPO_HOSTS, parseRepoHosts } from '../common/session/repo.ts';
import { agentProxyEnv, supervisorGitProxy, type Egress } from './egress/env.ts';
import { readEgressPassword } from './egress/token.ts';
import { isInside } from './workspace/paths.ts';

export const EnvSchema = Type.Object({
  TETHER_SESSION_NAME: Type.String({ minLength: 1, maxLength: 253, pattern: DNS_SUBDOMAIN_PATTERN }),
  TETHER_SESSION_NAMESPACE: Type.String({ minLength: 1, maxLength: 63, pattern: DNS_SUBDOMAIN_PATTERN }),
  TETHER_POD_NAME: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: DNS_SUBDOMAIN_PATTERN,
      description: "the runner Pod's own name (downward API): a later Session bound to it names it in status.podName",
    }),
  ),
  TETHER_RUNNER_LIVE: Type.Boolean({
    default: false,
    description: 'true: after its Session the runner stays and runs the next Session of the phone bound to its Pod',
  }),
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
  TETHER_RELAY_URL: Type.Optional(httpUrl('relay base URL for media uploads')),
  TETHER_RELAY_TOKEN_FILE: Type.String({ minLength: 1, default: '/var/run/secrets/tether/relay/token' }),
  GITHUB_API_URL: Type.String({ ...httpUrl('GitHub REST API base URL'), default: 'https://api.github.com' }),
  TETHER_REPO_HOSTS: Type.String({
    minLength: 1,
    default: DEFAULT_REPO_HOSTS.join(','),
    description: "the install's repository host list (from the controller)",
  }),
  GITHUB_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  GITHUB_TOKEN_FILE: Type.Optional(
    Type.String({
      minLength: 2,
      pattern: '^/',
      description: 'a file holding the GitHub token, read at each use (renewed under the runner); over GITHUB_TOKEN',
    }),
  ),
  ANTHROPIC_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  ANTHROPIC_BASE_URL: Type.Optional(
    httpUrl("a Messages API other than Anthropic's (a gateway, or a scripted model a test runs)"),
  ),
  TETHER_CLAUDE_MODEL: claudeModel('the model Claude Code runs', 'claude-sonnet-4-5'),
  HTTPS_PROXY: Type.Optional(proxyUrl('proxy of https traffic')),
  HTTP_PROXY: Type.Optional(proxyUrl('proxy of http traffic')),
  NO_PROXY: Type.Optional(noProxyList('hosts reached without the proxy, comma-separated')),
  TETHER_EGRESS_URL: Type.Optional(
    proxyUrl("Tether's egress proxy (no credential): the agent's and the supervisor's only way out"),
  ),
  TETHER_EGRESS_TOKEN_FILE: Type.Optional(
    Type.String({
      minLength: 2,
      pattern: '^/',
      description: "the file holding the supervisor's egress password (the Pod's own Secret, read once at start)",
    }),
  ),
  TETHER_MODEL_PORT: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 65535,
    description: "the loopback port of the supervisor's model endpoint (0: any free port)",
  }),
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
  TETHER_LOG_LEVEL: logLevel(),
  PATH: Type.String({ default: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' }),
  KUBECONFIG: Type.Optional(
    Type.String({ description: 'kubeconfig file (local runs); in a Pod the service account is used' }),
  ),
  KUBERNETES_SERVICE_HOST: Type.Optional(Type.String()),
  KUBERNETES_SERVICE_PORT: Type.Optional(Type.String({ pattern: '^[0-9]+$' })),
});
export type Env = Static<typeof EnvSchema>;

export { ConfigError };

/** The agent's checkout, below the workspace. */
const CHECKOUT = 'repo';

/** The key Claude Code is given for a Messages API that needs none (any non-empty value works). */
export const SCRIPTED_MODEL_KEY = 'scripted-model';
export const ANTHROPIC_API_URL = 'https://api.anthropic.com';

/**
 * Claude Code's environment pointed at a model endpoint on loopback (the scripted model, or the
 * key-adding proxy), with a dummy key.
 */
export function loopbackModelEnv(agentEnv: Record<string, string>, url: string): Record<string, string> {
  return { ...agentEnv, ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: SCRIPTED_MODEL_KEY };
}

/**
 * Claude Code's environment for one Session: the model endpoint on loopback when the supervisor runs
 * one, and with egress the Session's own proxy credential (every other way out is closed).
 */
export function sessionAgentEnv(
  config: Pick<RunnerConfig, 'agentEnv' | 'egress'>,
  session: string,
  modelUrl: string | undefined,
): Record<string, string> {
  const env = modelUrl ? loopbackModelEnv(config.agentEnv, modelUrl) : config.agentEnv;
  return config.egress ? { ...env, ...agentProxyEnv(config.egress, session) } : { ...env };
}

/** Loopback (the scripted model, a dev server, a test's remote) never goes through a proxy. */
const noProxy = (e: Env) => [e.NO_PROXY, '127.0.0.1', 'localhost'].filter(Boolean).join(',');

/** Set: the egress proxy, the supervisor's credential for it and the Pod it is named after. */
function egress(e: Env): Egress | undefined {
  if (!e.TETHER_EGRESS_URL !== !e.TETHER_EGRESS_TOKEN_FILE) {
    const missing = e.TETHER_EGRESS_URL ? 'TETHER_EGRESS_TOKEN_FILE' : 'TETHER_EGRESS_URL';
    throw new ConfigError(missing, 'is required with the other of TETHER_EGRESS_URL and TETHER_EGRESS_TOKEN_FILE');
  }
  if (!e.TETHER_EGRESS_URL || !e.TETHER_EGRESS_TOKEN_FILE) return undefined;
  if (!e.TETHER_POD_NAME)
    throw new ConfigError('TETHER_POD_NAME', 'is required with TETHER_EGRESS_URL (the supervisor is runner.<pod>)');
  const file = e.TETHER_EGRESS_TOKEN_FILE;
  const token = checked('TETHER_EGRESS_TOKEN_FILE', () => readEgressPassword(file));
  return { url: e.TETHER_EGRESS_URL.replace(/\/$/, ''), token, pod: e.TETHER_POD_NAME };
}

/** The proxy variables as curl (git's http) reads them: it takes http_proxy in lower case only. */
function gitProxy(e: Env, through: Egress | undefined): Record<string, string> {
  if (through) return supervisorGitProxy(through);
  if (!e.HTTPS_PROXY && !e.HTTP_PROXY) return {};
  return {
    ...(e.HTTPS_PROXY ? { https_proxy: e.HTTPS_PROXY } : {}),
    ...(e.HTTP_PROXY ? { http_proxy: e.HTTP_PROXY } : {}),
    no_proxy: noProxy(e),
  };
}

/** What Claude Code may see: never GITHUB_TOKEN. Its config and transcripts live in HOME (the volume). */
function agentEnvironment(e: Env): Record<string, string> {
  const agentEnv: Record<string, string> = {
    PATH: e.PATH,
    HOME: e.TETHER_AGENT_HOME,
    CLAUDE_CONFIG_DIR: `${e.TETHER_AGENT_HOME.replace(/\/$/, '')}/.claude`,
    LANG: 'C.UTF-8',
    // No telemetry, update checks or other calls besides the model's: the Pod talks to the API only.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
  };
  // With egress the Session's own proxy credential is added per Session (egress/env.ts), never the operator's proxy.
  const proxies = e.TETHER_EGRESS_URL ? [] : (['HTTPS_PROXY', 'HTTP_PROXY'] as const);
  for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', ...proxies] as const) {
    if (e[name]) agentEnv[name] = e[name];
  }
  if (!e.TETHER_EGRESS_URL && (e.HTTPS_PROXY || e.HTTP_PROXY || e.NO_PROXY)) agentEnv.NO_PROXY = noProxy(e);
  if (e.ANTHROPIC_BASE_URL && !e.ANTHROPIC_API_KEY) agentEnv.ANTHROPIC_API_KEY = SCRIPTED_MODEL_KEY;
  return agentEnv;
}

/** The agent's folders inside the workspace, the runner's private store outside it. */
function folders(e: Env) {
  if (isInside(e.TETHER_WORKSPACE, e.TETHER_GIT_STORE)) {
    throw new ConfigError(
      'TETHER_GIT_STORE',
      `"${e.TETHER_GIT_STORE}" is invalid: it must be outside TETHER_WORKSPACE, which the agent can write`,
    );
  }
  if (!isInside(e.TETHER_WORKSPACE, e.TETHER_AGENT_HOME)) {
    throw new ConfigError(
      'TETHER_AGENT_HOME',
      `"${e.TETHER_AGENT_HOME}" is invalid: it must be inside TETHER_WORKSPACE, ` +
        'where the agent keeps its conversations',
    );
  }
  return {
    workspace: e.TETHER_WORKSPACE,
    /** The agent's checkout, relative to the workspace. */
    checkout: CHECKOUT,
    repoDir: `${e.TETHER_WORKSPACE.replace(/\/$/, '')}/${CHECKOUT}`,
    home: e.TETHER_AGENT_HOME,
    /** The runner's private folder for git (object store, git's HOME): never on the agent's volume. */
    gitStore: e.TETHER_GIT_STORE,
    /** Pictures kept when there is no relay: in the private folder, never on the agent's volume. */
    mediaDir: `${e.TETHER_GIT_STORE.replace(/\/$/, '')}/media`,
  };
}

/** The model Claude Code talks to, and the agent container it may run in. */
function agent(e: Env) {
  const author = /^(.+) <(.+)>$/.exec(e.TETHER_GIT_AUTHOR)!;
  return {
    anthropicApiKey: e.ANTHROPIC_API_KEY,
    /** Where model calls go (the real API unless a gateway is configured). */
    anthropicBaseUrl: (e.ANTHROPIC_BASE_URL ?? ANTHROPIC_API_URL).replace(/\/$/, ''),
    /** Set: Claude Code runs in the agent container, started through the agent channel on this socket. */
    agentSocket: e.TETHER_AGENT_SOCKET,
    /** No API key and no other Messages API: Claude Code talks to the scripted model on loopback. */
    scriptedModel: !e.ANTHROPIC_API_KEY && !e.ANTHROPIC_BASE_URL,
    /** The model Claude Code runs (pinned). */
    model: e.TETHER_CLAUDE_MODEL,
    policyJson: e.TETHER_PERMISSION_POLICY,
    /** Claude Code's binary; unset: the one in the Agent SDK's platform package. */
    claudePath: e.TETHER_CLAUDE_PATH,
    gitAuthor: { name: author[1]!, email: author[2]! },
    agentEnv: agentEnvironment(e),
  };
}

/** Set: a live runner, which serves each later Session the controller binds to this Pod. */
function live(e: Env): { podName: string } | undefined {
  if (!e.TETHER_RUNNER_LIVE) return undefined;
  if (!e.TETHER_POD_NAME) {
    throw new ConfigError(
      'TETHER_POD_NAME',
      'is required with TETHER_RUNNER_LIVE=true (the Pod a Session is bound to)',
    );
  }
  return { podName: e.TETHER_POD_NAME };
}

function configFrom(e: Env) {
  const through = egress(e);
  return {
    /** The first Session: the one the Pod was made for (or, for a live Pod, the first bound to it). */
    session: { name: e.TETHER_SESSION_NAME, namespace: e.TETHER_SESSION_NAMESPACE },
    live: live(e),
    ...folders(e),
    relay: e.TETHER_RELAY_URL
      ? { url: e.TETHER_RELAY_URL.replace(/\/$/, ''), tokenFile: e.TETHER_RELAY_TOKEN_FILE }
      : undefined,
    github: {
      apiUrl: e.GITHUB_API_URL.replace(/\/$/, ''),
      /** Set: the token is this file's content at each use (an App installation token the controller renews). */
      ...(e.GITHUB_TOKEN_FILE ? { tokenFile: e.GITHUB_TOKEN_FILE } : { token: e.GITHUB_TOKEN }),
    },
    /**
     * The supervisor's git goes through the egress proxy when there is one, else the Pod's proxy (its fetch and
     * https calls too, by NODE_USE_ENV_PROXY).
     */
    gitProxy: gitProxy(e, through),
    /** Set: every connection of the agent and of the supervisor goes through Tether's egress proxy. */
    egress: through,
    /** The loopback port the model endpoint (model proxy or scripted model) binds; 0: any free port. */
    modelPort: e.TETHER_MODEL_PORT,
    /** Hosts (host[:port]) and local folders the Session's repository may be on. */
    repoHosts: checked('TETHER_REPO_HOSTS', () => parseRepoHosts(e.TETHER_REPO_HOSTS)),
    ...agent(e),
    logLevel: e.TETHER_LOG_LEVEL,
    /** Values that must never leave the process (status, logs, images). */
    secrets: [e.GITHUB_TOKEN, e.ANTHROPIC_API_KEY, through?.token].filter((s): s is string => !!s && s.length >= 4),
    /** Where to find the API server and credentials. */
    kube: {
      KUBECONFIG: e.KUBECONFIG,
      inClusterOnly: true,
      KUBERNETES_SERVICE_HOST: e.KUBERNETES_SERVICE_HOST,
      KUBERNETES_SERVICE_PORT: e.KUBERNETES_SERVICE_PORT,
    },
  };
}

export type RunnerConfig = ReturnType<typeof configFrom>;

/** Parses an environment; throws ConfigError naming the first bad variable. */
export function parseConfig(env: EnvSource, onRenamed = logRenamed('runner')): RunnerConfig {
  return readConfig(EnvSchema, env, configFrom, { renamed: renamedOf('LOG_LEVEL'), onRenamed });
}

export function loadConfig(): RunnerConfig {
  return parseConfig(process.env);
}
