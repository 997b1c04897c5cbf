// The egress proxy's configuration: the only reader of process.env. Parsed once at start-up; a bad
// value stops the process with a message naming the variable (docs/egress.md, "Configuration").
import { Type, type Static } from '@sinclair/typebox';
import { checked, ConfigError, logRenamed, readConfig, type EnvSource } from '../common/config/env.ts';
import { duration, durationMs, logLevel, namespaceName, renamedOf } from '../common/config/values.ts';
import { EGRESS_KEY_MIN_LENGTH } from '../common/egress/credentials.ts';
import { parseHostEntry, type HostEntry } from '../common/egress/hosts.ts';
import type { KubeEnvironment } from '../common/kube/kubeconfig.ts';
import { DNS_SUBDOMAIN_PATTERN } from '../common/session/patterns.ts';
import { DEFAULT_REPO_HOSTS, parseRepoHosts } from '../common/session/repo.ts';
import { DEFAULT_BLOCKED_CIDRS, parseCidrs } from './cidrs.ts';
import { parseForgeHosts } from './target.ts';

export { ConfigError };

const whole = (fallback: number, minimum: number, description: string, maximum?: number) =>
  Type.Integer({ default: fallback, minimum, description, ...(maximum === undefined ? {} : { maximum }) });
const list = (description: string) => Type.Optional(Type.String({ description }));

/** Every variable the egress proxy reads, with its rule and default. */
export const EGRESS_ENV = Type.Object({
  TETHER_EGRESS_PORT: whole(3128, 0, 'the port of the proxy, the supervisor API, /metrics and /healthz', 65535),
  TETHER_EGRESS_LISTEN: Type.String({ pattern: '^[0-9a-fA-F.:]+$', default: '0.0.0.0', description: 'address' }),
  TETHER_EGRESS_KEY: Type.String({
    minLength: EGRESS_KEY_MIN_LENGTH,
    description: `the install's egress key, at least ${EGRESS_KEY_MIN_LENGTH} characters (the chart generates one)`,
  }),
  TETHER_NAMESPACE: namespaceName('namespace of the Session objects (and of the grants ConfigMap)', 'tether'),
  TETHER_RUNNER_NAMESPACE: Type.Optional(namespaceName('namespace of runner Pods; absent → TETHER_NAMESPACE')),
  TETHER_REPO_HOSTS: Type.String({ pattern: '^[^\\s]+$', default: DEFAULT_REPO_HOSTS.join(',') }),
  TETHER_EGRESS_ALLOW: list("comma-separated host entries the agent may reach (the install's list)"),
  TETHER_EGRESS_DENY: list('comma-separated host entries nobody may reach, whatever else allows them'),
  TETHER_EGRESS_SUPERVISOR_ALLOW: list('comma-separated host entries the supervisor may reach (forge, APIs)'),
  TETHER_EGRESS_REPOSITORIES: list('JSON object: {"<repository URL>": ["entry", …]}, per-repository additions'),
  TETHER_EGRESS_ASK: Type.Boolean({ default: true, description: 'ask the phone about an unlisted destination' }),
  TETHER_EGRESS_ASK_WAIT: duration('60s', 'how long a connection waits for the phone'),
  TETHER_EGRESS_BLOCKED_CIDRS: list('comma-separated CIDRs never reached unless listed; `none`: no range'),
  TETHER_EGRESS_GRANTS: Type.String({ pattern: DNS_SUBDOMAIN_PATTERN, default: 'tether-egress-grants' }),
  TETHER_EGRESS_MAX_CONNECTIONS: whole(1024, 1, 'open client connections at once (more are closed)'),
  TETHER_EGRESS_MAX_SESSION_CONNECTIONS: whole(64, 1, "open connections of one Session's agent (below the total)"),
  TETHER_EGRESS_MAX_SUPERVISOR_CONNECTIONS: whole(64, 1, "open connections of one runner Pod's supervisor"),
  TETHER_EGRESS_MAX_UNAUTHENTICATED: whole(256, 1, 'open connections that have not shown a credential yet'),
  TETHER_EGRESS_UNAUTHENTICATED_TIMEOUT: duration(
    '5s',
    'a connection that shows no credential for this long is closed',
  ),
  TETHER_EGRESS_MAX_WAITING: whole(16, 1, 'connections of one Session waiting for the phone at once'),
  TETHER_EGRESS_MAX_ASKS: whole(8, 1, 'open questions to the phone of one Session at once'),
  TETHER_EGRESS_FORGE_CACHE: duration('30s', "how long the forges' resolved addresses are kept"),
  TETHER_EGRESS_IDLE_TIMEOUT: duration('5m', 'a tunnel or request with no byte either way for this long is closed'),
  TETHER_EGRESS_HEADER_TIMEOUT: duration('10s', "time a client has to send a request's headers"),
  TETHER_EGRESS_MAX_HEADER_BYTES: whole(16_384, 1024, 'the largest request head accepted', 65_536),
  TETHER_EGRESS_GRANT_ENTRIES: whole(100, 1, 'persisted grants kept per repository (the oldest go first)'),
  TETHER_LOG_LEVEL: logLevel(),
  KUBECONFIG: Type.Optional(Type.String({ description: 'kubeconfig file (local runs); in a Pod the service account' })),
  HOME: Type.Optional(Type.String()),
  KUBERNETES_SERVICE_HOST: Type.Optional(Type.String()),
  KUBERNETES_SERVICE_PORT: Type.Optional(Type.String()),
});
type Env = Static<typeof EGRESS_ENV>;

/** The comma-separated entries of a host list variable, each parsed; throws naming the variable. */
function entries(variable: keyof Env, text: string | undefined): HostEntry[] {
  const items = (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return checked(variable, () => items.map(parseHostEntry));
}

/** TETHER_EGRESS_REPOSITORIES: repository URL → its additions. */
function repositories(text: string | undefined): Map<string, HostEntry[]> {
  if (!text) return new Map();
  return checked('TETHER_EGRESS_REPOSITORIES', () => {
    const parsed: unknown = JSON.parse(text);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error('must be a JSON object of repository URL → list of host entries');
    return new Map(
      Object.entries(parsed).map(([url, value]) => {
        if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
          throw new Error(`"${url.slice(0, 80)}" must name a list of host entries`);
        return [url, value.map(parseHostEntry)];
      }),
    );
  });
}

function positive(variable: keyof Env, text: string): number {
  const ms = durationMs(text);
  if (!(ms > 0)) throw new ConfigError(variable, `must be greater than zero (got ${JSON.stringify(text)})`);
  return ms;
}

/** A share of the open connections must stay below their total, or it protects nothing. */
function belowTotal(env: Env, variable: keyof Env): number {
  const value = env[variable] as number;
  if (value >= env.TETHER_EGRESS_MAX_CONNECTIONS)
    throw new ConfigError(
      variable,
      `must be below TETHER_EGRESS_MAX_CONNECTIONS (${env.TETHER_EGRESS_MAX_CONNECTIONS}); got ${value}`,
    );
  return value;
}

function build(env: Env) {
  const blocked = env.TETHER_EGRESS_BLOCKED_CIDRS;
  return {
    port: env.TETHER_EGRESS_PORT,
    listen: env.TETHER_EGRESS_LISTEN,
    key: env.TETHER_EGRESS_KEY,
    namespace: env.TETHER_NAMESPACE,
    runnerNamespace: env.TETHER_RUNNER_NAMESPACE ?? env.TETHER_NAMESPACE,
    grantsConfigMap: env.TETHER_EGRESS_GRANTS,
    logLevel: env.TETHER_LOG_LEVEL,
    rules: {
      forgeHosts: checked('TETHER_REPO_HOSTS', () => parseForgeHosts(parseRepoHosts(env.TETHER_REPO_HOSTS))),
      allow: entries('TETHER_EGRESS_ALLOW', env.TETHER_EGRESS_ALLOW),
      deny: entries('TETHER_EGRESS_DENY', env.TETHER_EGRESS_DENY),
      supervisorAllow: entries('TETHER_EGRESS_SUPERVISOR_ALLOW', env.TETHER_EGRESS_SUPERVISOR_ALLOW),
      repositories: repositories(env.TETHER_EGRESS_REPOSITORIES),
      blocked: checked('TETHER_EGRESS_BLOCKED_CIDRS', () =>
        parseCidrs(blocked === undefined ? DEFAULT_BLOCKED_CIDRS.join(',') : blocked),
      ),
      ask: env.TETHER_EGRESS_ASK,
    },
    limits: {
      askWaitMs: positive('TETHER_EGRESS_ASK_WAIT', env.TETHER_EGRESS_ASK_WAIT),
      maxConnections: env.TETHER_EGRESS_MAX_CONNECTIONS,
      maxConnectionsPerSession: belowTotal(env, 'TETHER_EGRESS_MAX_SESSION_CONNECTIONS'),
      maxConnectionsPerSupervisor: belowTotal(env, 'TETHER_EGRESS_MAX_SUPERVISOR_CONNECTIONS'),
      maxUnauthenticated: belowTotal(env, 'TETHER_EGRESS_MAX_UNAUTHENTICATED'),
      unauthenticatedMs: positive('TETHER_EGRESS_UNAUTHENTICATED_TIMEOUT', env.TETHER_EGRESS_UNAUTHENTICATED_TIMEOUT),
      maxWaitingPerSession: env.TETHER_EGRESS_MAX_WAITING,
      maxAsksPerSession: env.TETHER_EGRESS_MAX_ASKS,
      forgeCacheMs: positive('TETHER_EGRESS_FORGE_CACHE', env.TETHER_EGRESS_FORGE_CACHE),
      idleMs: positive('TETHER_EGRESS_IDLE_TIMEOUT', env.TETHER_EGRESS_IDLE_TIMEOUT),
      headerMs: positive('TETHER_EGRESS_HEADER_TIMEOUT', env.TETHER_EGRESS_HEADER_TIMEOUT),
      maxHeaderBytes: env.TETHER_EGRESS_MAX_HEADER_BYTES,
      grantEntriesPerRepository: env.TETHER_EGRESS_GRANT_ENTRIES,
    },
  };
}

export type EgressConfig = ReturnType<typeof build>;
export type Rules = EgressConfig['rules'];
export type Limits = EgressConfig['limits'];

/** Reads and checks the environment once; throws ConfigError naming the first bad variable. */
export function loadConfig(source: EnvSource = process.env): EgressConfig {
  return readConfig(EGRESS_ENV, source, build, {
    renamed: renamedOf('LOG_LEVEL'),
    onRenamed: logRenamed('egress'),
  });
}

/** Where to find the API server: KUBECONFIG like the other components, else the Pod's service account. */
export const kubeEnvironment = (source: EnvSource = process.env): KubeEnvironment => ({
  KUBECONFIG: source.KUBECONFIG,
  HOME: source.HOME,
  KUBERNETES_SERVICE_HOST: source.KUBERNETES_SERVICE_HOST,
  KUBERNETES_SERVICE_PORT: source.KUBERNETES_SERVICE_PORT,
});
