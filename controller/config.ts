// The controller's configuration: the one reader of process.env. Every variable has a
// schema; a bad value stops start-up with a message naming the variable.
import { hostname } from 'node:os';
import { Type, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { KubeEnvironment } from '../common/kube/kubeconfig.ts';
import { policyOver } from '../common/permission-policy.ts';
import { COST_DEFAULTS, type CostBudget } from '../common/session/budget.ts';
import { RUNNER_START_TIMEOUT, SESSION_DEFAULTS } from '../common/session/defaults.ts';
import { parseDuration } from '../common/session/display.ts';
import { DEFAULT_REPO_HOSTS, parseRepoHosts } from '../common/session/repo.ts';

const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$';
const QUANTITY = '^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$';
const DURATION = '^([0-9]+(h|m|s))+$';
const INTEGER = '^[0-9]+$';
const URL_PATTERN = '^https?://[^\\s]+$';

const text = (pattern: string, fallback?: string) => ({ schema: Type.String({ pattern }), fallback });

/** Variable → schema and default (undefined default = optional). */
const VARIABLES = {
  TETHER_NAMESPACE: text(DNS_LABEL, 'tether'),
  TETHER_RUNNER_NAMESPACE: text(DNS_LABEL),
  TETHER_RUNNER_IMAGE: text('^[^\\s]+$', 'tether-runner:latest'),
  TETHER_RUNNER_SECRET: text(DNS_SUBDOMAIN, 'tether-runner'),
  TETHER_RUNNER_RUNTIME_CLASS: text(DNS_SUBDOMAIN),
  TETHER_RUNNER_PERMISSION_POLICY: text('^\\s*\\{[\\s\\S]*\\}\\s*$'),
  TETHER_RUNNER_SERVICE_ACCOUNT_TOKEN_SECONDS: text(INTEGER, '3600'),
  TETHER_PVC_SIZE: text(QUANTITY, '10Gi'),
  TETHER_PVC_STORAGE_CLASS: text(DNS_SUBDOMAIN),
  TETHER_RUNNER_CPU_REQUEST: text(QUANTITY, '500m'),
  TETHER_RUNNER_MEMORY_REQUEST: text(QUANTITY, '1Gi'),
  TETHER_RUNNER_CPU_LIMIT: text(QUANTITY, '2'),
  TETHER_RUNNER_MEMORY_LIMIT: text(QUANTITY, '4Gi'),
  TETHER_TERMINATION_GRACE_SECONDS: text(INTEGER, '30'),
  TETHER_RELAY_URL: text(URL_PATTERN),
  TETHER_RUNNER_HOST_NETWORK: text('^(true|false)$', 'false'),
  TETHER_RUNNER_API_SERVER: text('^[^\\s:/]+:[0-9]+$'),
  GITHUB_API_URL: text(URL_PATTERN),
  TETHER_REPO_HOSTS: text('^[^\\s]+$', DEFAULT_REPO_HOSTS.join(',')),
  TETHER_RUN_TIMEOUT: text(DURATION, SESSION_DEFAULTS.timeouts.run),
  TETHER_APPROVAL_TIMEOUT: text(DURATION, SESSION_DEFAULTS.timeouts.approval),
  TETHER_START_TIMEOUT: text(DURATION, RUNNER_START_TIMEOUT),
  TETHER_POD_TTL: text(DURATION, '10m'),
  TETHER_HISTORY_COUNT: text(INTEGER, '20'),
  TETHER_HISTORY_MAX_AGE: text(DURATION, '720h'),
  TETHER_MAX_QUEUED: text(INTEGER, String(SESSION_DEFAULTS.maxQueued)),
  TETHER_DAILY_BUDGET_USD: text('^[0-9]+(\\.[0-9]+)?$', String(COST_DEFAULTS.dailyUsd)),
  TETHER_BUDGET_TIMEZONE: text('^[A-Za-z0-9_+/-]+$', COST_DEFAULTS.timeZone),
  TETHER_CONCURRENCY: text(INTEGER, '8'),
  TETHER_METRICS_PORT: text(INTEGER, '9090'),
  TETHER_LEADER_ELECTION: text('^(true|false)$', 'true'),
  TETHER_LEASE_NAME: text(DNS_SUBDOMAIN, 'tether-controller'),
  TETHER_STALL_TIMEOUT: text(DURATION, '150s'),
  TETHER_LOG_LEVEL: text('^(trace|debug|info|warn|error|fatal)$', 'info'),
  POD_NAME: text('^[^\\s]+$'),
} satisfies Record<string, { schema: TSchema; fallback?: string }>;

export type Variable = keyof typeof VARIABLES;

/** Every variable the controller reads. */
export const VARIABLE_NAMES = Object.keys(VARIABLES) as Variable[];

export interface ControllerConfig {
  namespace: string;
  /** Where runner Pods, their workspaces and identities live (default: the Sessions' namespace). */
  runnerNamespace: string;
  runnerImage: string;
  runnerSecret: string;
  /** RuntimeClass of runner Pods (e.g. gvisor); unset → the cluster default. */
  runtimeClassName?: string;
  /** The install's permission policy (JSON over the runner's defaults), passed to runners as TETHER_PERMISSION_POLICY. */
  permissionPolicy?: string;
  tokenExpirationSeconds: number;
  pvc: { size: string; storageClass?: string };
  resources: { requests: { cpu: string; memory: string }; limits: { cpu: string; memory: string } };
  terminationGraceSeconds: number;
  relayUrl?: string;
  githubApiUrl?: string;
  /** Hosts (host[:port]) and local folders a Session's repo.url may point at; the token goes nowhere else. */
  repoHosts: string[];
  /**
   * The host-network / loopback test tier (docs/chart.md): runner Pods on the node's network, told
   * the API server's address (host:port) instead of the `kubernetes` Service's virtual IP.
   */
  hostNetwork?: { apiServer?: { host: string; port: string } };
  defaultRunTimeoutMs: number;
  defaultApprovalTimeoutMs: number;
  /** A runner Pod not started (its runner Working) this long after creation fails its Session. */
  startTimeoutMs: number;
  podTtlMs: number;
  historyCount: number;
  historyMaxAgeMs: number;
  maxQueued: number;
  /** The phone's daily budget (the relay's, from the same chart values): a waiting command whose turn comes over it ends OverBudget. */
  budget: Pick<CostBudget, 'dailyUsd' | 'timeZone'>;
  concurrency: number;
  metricsPort: number;
  leaderElection: boolean;
  leaseName: string;
  identity: string;
  stallTimeoutMs: number;
  logLevel: string;
  /** Where to find the API server (kubeconfig, or the Pod's service account). */
  kube: KubeEnvironment;
}

export class ConfigError extends Error {}

function read(env: Record<string, string | undefined>): Record<Variable, string | undefined> {
  const out = {} as Record<Variable, string | undefined>;
  for (const [name, { schema, fallback }] of Object.entries(VARIABLES) as Array<
    [Variable, { schema: TSchema; fallback?: string }]
  >) {
    const raw = env[name];
    const value = raw === undefined || raw === '' ? fallback : raw;
    if (value !== undefined && !Value.Check(schema, value)) {
      const shown = /TOKEN|SECRET|KEY/.test(name) ? '(hidden)' : JSON.stringify(value);
      throw new ConfigError(`${name}=${shown} is invalid: must match ${(schema as { pattern?: string }).pattern}`);
    }
    out[name] = value;
  }
  return out;
}

function positive(name: Variable, value: number): number {
  if (!(value > 0)) throw new ConfigError(`${name} must be greater than zero`);
  return value;
}

function atLeast(name: Variable, value: number, min: number): number {
  if (value < min) throw new ConfigError(`${name}=${value} is invalid: must be at least ${min}`);
  return value;
}

function repoHosts(text: string): string[] {
  try {
    return parseRepoHosts(text);
  } catch (error) {
    throw new ConfigError(`TETHER_REPO_HOSTS is invalid: ${(error as Error).message}`);
  }
}

/** The policy JSON as given, once it is known to be one the runner accepts. */
function checkedPolicy(json: string): string {
  try {
    policyOver({ allow: [], ask: [], deny: [], editsInsideRepo: true }, json, 'TETHER_RUNNER_PERMISSION_POLICY');
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  return json;
}

function timeZone(name: string): string {
  try {
    new Intl.DateTimeFormat('en-CA', { timeZone: name });
  } catch {
    throw new ConfigError(
      `TETHER_BUDGET_TIMEZONE="${name.slice(0, 40)}" is not an IANA time zone (e.g. UTC, Europe/Berlin)`,
    );
  }
  return name;
}

function hostNetwork(apiServer: string | undefined): NonNullable<ControllerConfig['hostNetwork']> {
  if (!apiServer) return {};
  const at = apiServer.lastIndexOf(':');
  return { apiServer: { host: apiServer.slice(0, at), port: apiServer.slice(at + 1) } };
}

export function loadConfig(env: Record<string, string | undefined> = process.env): ControllerConfig {
  const v = read(env);
  const int = (name: Variable) => Number(v[name]);
  const ms = (name: Variable) => positive(name, parseDuration(v[name]!));
  const port = int('TETHER_METRICS_PORT');
  if (port > 65535) throw new ConfigError(`TETHER_METRICS_PORT=${port} is invalid: must be at most 65535`);
  return {
    namespace: v.TETHER_NAMESPACE!,
    runnerNamespace: v.TETHER_RUNNER_NAMESPACE ?? v.TETHER_NAMESPACE!,
    runnerImage: v.TETHER_RUNNER_IMAGE!,
    runnerSecret: v.TETHER_RUNNER_SECRET!,
    ...(v.TETHER_RUNNER_RUNTIME_CLASS ? { runtimeClassName: v.TETHER_RUNNER_RUNTIME_CLASS } : {}),
    ...(v.TETHER_RUNNER_PERMISSION_POLICY
      ? { permissionPolicy: checkedPolicy(v.TETHER_RUNNER_PERMISSION_POLICY) }
      : {}),
    tokenExpirationSeconds: atLeast(
      'TETHER_RUNNER_SERVICE_ACCOUNT_TOKEN_SECONDS',
      int('TETHER_RUNNER_SERVICE_ACCOUNT_TOKEN_SECONDS'),
      600,
    ),
    pvc: { size: v.TETHER_PVC_SIZE!, storageClass: v.TETHER_PVC_STORAGE_CLASS },
    resources: {
      requests: { cpu: v.TETHER_RUNNER_CPU_REQUEST!, memory: v.TETHER_RUNNER_MEMORY_REQUEST! },
      limits: { cpu: v.TETHER_RUNNER_CPU_LIMIT!, memory: v.TETHER_RUNNER_MEMORY_LIMIT! },
    },
    terminationGraceSeconds: int('TETHER_TERMINATION_GRACE_SECONDS'),
    relayUrl: v.TETHER_RELAY_URL,
    githubApiUrl: v.GITHUB_API_URL,
    repoHosts: repoHosts(v.TETHER_REPO_HOSTS!),
    ...(v.TETHER_RUNNER_HOST_NETWORK === 'true' ? { hostNetwork: hostNetwork(v.TETHER_RUNNER_API_SERVER) } : {}),
    defaultRunTimeoutMs: ms('TETHER_RUN_TIMEOUT'),
    defaultApprovalTimeoutMs: ms('TETHER_APPROVAL_TIMEOUT'),
    startTimeoutMs: ms('TETHER_START_TIMEOUT'),
    podTtlMs: parseDuration(v.TETHER_POD_TTL!),
    historyCount: positive('TETHER_HISTORY_COUNT', int('TETHER_HISTORY_COUNT')),
    historyMaxAgeMs: ms('TETHER_HISTORY_MAX_AGE'),
    maxQueued: int('TETHER_MAX_QUEUED'),
    budget: { dailyUsd: Number(v.TETHER_DAILY_BUDGET_USD), timeZone: timeZone(v.TETHER_BUDGET_TIMEZONE!) },
    concurrency: positive('TETHER_CONCURRENCY', int('TETHER_CONCURRENCY')),
    metricsPort: port,
    leaderElection: v.TETHER_LEADER_ELECTION === 'true',
    leaseName: v.TETHER_LEASE_NAME!,
    identity: v.POD_NAME ?? hostname(),
    stallTimeoutMs: ms('TETHER_STALL_TIMEOUT'),
    logLevel: v.TETHER_LOG_LEVEL!,
    kube: {
      KUBECONFIG: env.KUBECONFIG,
      HOME: env.HOME,
      KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST,
      KUBERNETES_SERVICE_PORT: env.KUBERNETES_SERVICE_PORT,
    },
  };
}
