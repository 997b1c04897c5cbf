// The controller's configuration: the one reader of process.env. Every variable has a schema;
// a bad value stops start-up with a message naming the variable.
import { hostname } from 'node:os';
import { Type, type Static } from '@sinclair/typebox';
import { checked, ConfigError, readConfig, type EnvSource } from '../common/config/env.ts';
import {
  claudeModel,
  httpUrl,
  logLevel,
  namespaceName,
  noProxyList,
  phoneHashKey,
  proxyUrl,
  sessionDuration,
  timeZone,
} from '../common/config/values.ts';
import { policyOver } from '../common/permission-policy.ts';
import { COST_DEFAULTS } from '../common/session/budget.ts';
import { MAX_QUEUED_CEILING, RUNNER_START_TIMEOUT, SESSION_DEFAULTS } from '../common/session/defaults.ts';
import { parseDuration } from '../common/session/display.ts';
import { DNS_SUBDOMAIN_PATTERN } from '../common/session/patterns.ts';
import { phoneHasher } from '../common/session/phone-hash.ts';
import { DEFAULT_REPO_HOSTS, parseRepoHosts } from '../common/session/repo.ts';
import { EGRESS_ENV, egressSettings } from './egress-settings.ts';
import { AGENT_UID, RUNNER_UID } from './runner-uids.ts';
import { jsonList, jsonObject, podLabels } from './runner-pod-values.ts';

export { ConfigError };

const DEFAULT_GITHUB_API_URL = 'https://api.github.com';
const KEEP_ALIVE_PATTERN = '^(0|([0-9]+(h|m|s))+)$';
const QUANTITY = '^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$';
const objectName = (description: string, fallback?: string) =>
  Type.String({ pattern: DNS_SUBDOMAIN_PATTERN, description, ...(fallback ? { default: fallback } : {}) });
const quantity = (fallback: string, description: string) =>
  Type.String({ pattern: QUANTITY, default: fallback, description: `a Kubernetes quantity: ${description}` });
const whole = (fallback: number, minimum: number, description: string, maximum?: number) =>
  Type.Integer({ default: fallback, minimum, description, ...(maximum === undefined ? {} : { maximum }) });
const duration = (fallback: string, description: string) => sessionDuration(fallback, description);
const optional = Type.Optional;

/** Every variable the controller reads, with its rule and default. */
export const CONTROLLER_ENV = Type.Object({
  TETHER_NAMESPACE: namespaceName('namespace of the Session objects', 'tether'),
  TETHER_RUNNER_NAMESPACE: optional(namespaceName('namespace of runner Pods; absent → TETHER_NAMESPACE')),
  TETHER_PHONE_HASH_KEY: phoneHashKey(),
  TETHER_RUNNER_IMAGE: Type.String({ pattern: '^[^\\s]+$', default: 'tether-runner:latest' }),
  TETHER_RUNNER_SECRET: objectName('Secret of the runner credentials', 'tether-runner'),
  TETHER_RUNNER_RUNTIME_CLASS: optional(objectName('RuntimeClass of runner Pods (e.g. gvisor)')),
  TETHER_RUNNER_PERMISSION_POLICY: optional(
    Type.String({ pattern: '^\\s*\\{[\\s\\S]*\\}\\s*$', description: "a JSON permission policy over the runner's" }),
  ),
  TETHER_RUNNER_SERVICE_ACCOUNT_TOKEN_SECONDS: whole(3600, 600, "lifetime of a runner's projected token"),
  TETHER_PVC_SIZE: quantity('10Gi', 'size of a workspace volume'),
  TETHER_PVC_STORAGE_CLASS: optional(objectName('StorageClass of workspace volumes')),
  TETHER_RUNNER_CPU_REQUEST: quantity('500m', 'CPU request of a runner'),
  TETHER_RUNNER_MEMORY_REQUEST: quantity('1Gi', 'memory request of a runner'),
  TETHER_RUNNER_CPU_LIMIT: quantity('2', 'CPU limit of a runner'),
  TETHER_RUNNER_MEMORY_LIMIT: quantity('4Gi', 'memory limit of a runner'),
  TETHER_TERMINATION_GRACE_SECONDS: whole(30, 0, "a runner Pod's termination grace period"),
  TETHER_RELAY_URL: optional(httpUrl("the relay's base URL, given to runners for media uploads")),
  // Given to the runner container (docs/runner.md, "Environment"): the agent's come from the runner's.
  TETHER_RUNNER_CLAUDE_MODEL: optional(claudeModel("runners' TETHER_CLAUDE_MODEL")),
  TETHER_RUNNER_ANTHROPIC_BASE_URL: optional(httpUrl("runners' ANTHROPIC_BASE_URL (a Messages API gateway)")),
  TETHER_RUNNER_HTTPS_PROXY: optional(proxyUrl("runners' HTTPS_PROXY")),
  TETHER_RUNNER_HTTP_PROXY: optional(proxyUrl("runners' HTTP_PROXY")),
  TETHER_RUNNER_NO_PROXY: optional(noProxyList("runners' NO_PROXY, comma-separated")),
  ...EGRESS_ENV,
  // Where runner Pods run and as whom (JSON values are Pod spec fields, as Kubernetes takes them).
  TETHER_RUNNER_PRIORITY_CLASS: optional(objectName('PriorityClass of runner Pods')),
  TETHER_RUNNER_NODE_SELECTOR: optional(Type.String({ description: 'JSON object: nodeSelector of runner Pods' })),
  TETHER_RUNNER_TOLERATIONS: optional(Type.String({ description: 'JSON list: tolerations of runner Pods' })),
  TETHER_RUNNER_AFFINITY: optional(Type.String({ description: 'JSON object: affinity of runner Pods' })),
  TETHER_RUNNER_TOPOLOGY_SPREAD: optional(
    Type.String({ description: 'JSON list: topologySpreadConstraints of runner Pods' }),
  ),
  TETHER_RUNNER_POD_LABELS: optional(Type.String({ description: "JSON object: more labels (not Tether's own)" })),
  TETHER_RUNNER_UID: whole(RUNNER_UID, 1, "uid of the runner's supervisor container (the credentials' holder)"),
  TETHER_RUNNER_AGENT_UID: whole(AGENT_UID, 1, "uid of the agent container (Claude Code); not the supervisor's"),
  TETHER_RUNNER_GID: whole(RUNNER_UID, 1, "runAsGroup and fsGroup of runner Pods (the workspace's group)"),
  TETHER_RUNNER_HOST_NETWORK: Type.Boolean({ default: false, description: "runner Pods on the node's network" }),
  TETHER_RUNNER_API_SERVER: optional(Type.String({ pattern: '^[^\\s:/]+:[0-9]+$', description: 'host:port' })),
  GITHUB_API_URL: optional(httpUrl('GitHub REST API base URL')),
  // The GitHub App (all three or none): runner Pods and the relay get installation tokens (github-app.ts).
  TETHER_GITHUB_APP_ID: optional(Type.String({ pattern: '^[0-9]+$', description: "the GitHub App's id" })),
  TETHER_GITHUB_APP_INSTALLATION_ID: optional(Type.String({ pattern: '^[0-9]+$', description: 'its installation' })),
  TETHER_GITHUB_APP_PRIVATE_KEY_FILE: optional(
    Type.String({ pattern: '^/', description: "the App's private key (PEM), a Secret only the controller mounts" }),
  ),
  TETHER_GITHUB_RELAY_SECRET: optional(objectName("the relay's token Secret the controller keeps, with an App")),
  TETHER_REPO_HOSTS: Type.String({ pattern: '^[^\\s]+$', default: DEFAULT_REPO_HOSTS.join(',') }),
  TETHER_RUN_TIMEOUT: duration(SESSION_DEFAULTS.timeouts.run, 'spec.timeouts.run of Sessions that set none'),
  TETHER_APPROVAL_TIMEOUT: duration(SESSION_DEFAULTS.timeouts.approval, 'spec.timeouts.approval likewise'),
  TETHER_START_TIMEOUT: duration(RUNNER_START_TIMEOUT, 'how long a runner Pod may take to start'),
  TETHER_POD_TTL: duration('10m', 'how long a finished runner Pod is kept'),
  TETHER_RUNNER_KEEP_ALIVE: Type.String({
    pattern: KEEP_ALIVE_PATTERN,
    default: '10m',
    description: "how long a phone's runner Pod waits live for its next command (e.g. 10m); 0: off",
  }),
  TETHER_HISTORY_COUNT: whole(20, 1, 'finished Sessions kept per phone'),
  TETHER_HISTORY_MAX_AGE: duration('720h', 'how long a finished Session is kept'),
  TETHER_MAX_QUEUED: whole(SESSION_DEFAULTS.maxQueued, 0, 'commands a phone may have waiting', MAX_QUEUED_CEILING),
  TETHER_DAILY_BUDGET_USD: Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', default: String(COST_DEFAULTS.dailyUsd) }),
  TETHER_BUDGET_TIMEZONE: Type.String({ pattern: '^[A-Za-z0-9_+/-]+$', default: COST_DEFAULTS.timeZone }),
  TETHER_CONCURRENCY: whole(8, 1, 'Sessions reconciled at once'),
  TETHER_METRICS_PORT: whole(9090, 0, 'port of /metrics and the probes', 65535),
  TETHER_METRICS_ADDRESS: Type.String({
    pattern: '^[0-9a-fA-F.:]+$',
    default: '0.0.0.0',
    description: 'address /metrics and the probes listen on',
  }),
  TETHER_LEADER_ELECTION: Type.Boolean({ default: true }),
  TETHER_LEASE_NAME: objectName('Lease of the leader election', 'tether-controller'),
  TETHER_STALL_TIMEOUT: duration('150s', 'silence after which a Working runner is stalled'),
  TETHER_LOG_LEVEL: logLevel(),
  POD_NAME: optional(Type.String({ pattern: '^[^\\s]+$', description: "this replica's identity" })),
  KUBECONFIG: optional(Type.String({ description: 'kubeconfig file (local runs); in a Pod the service account' })),
  HOME: optional(Type.String()),
  KUBERNETES_SERVICE_HOST: optional(Type.String()),
  KUBERNETES_SERVICE_PORT: optional(Type.String()),
});
type Env = Static<typeof CONTROLLER_ENV>;

/** Where to find the API server: not the controller's own settings. */
const KUBE_VARIABLES = ['KUBECONFIG', 'HOME', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT'];

/** Every variable the controller's own settings come from. */
export const VARIABLE_NAMES = Object.keys(CONTROLLER_ENV.properties).filter((n) => !KUBE_VARIABLES.includes(n));

/** The policy JSON as given, once it is known to be one the runner accepts. */
function checkedPolicy(json: string): string {
  policyOver({ allow: [], ask: [], deny: [], editsInsideRepo: true }, json, 'TETHER_RUNNER_PERMISSION_POLICY');
  return json;
}

function hostNetwork(apiServer: string | undefined): { apiServer?: { host: string; port: string } } {
  if (!apiServer) return {};
  const at = apiServer.lastIndexOf(':');
  return { apiServer: { host: apiServer.slice(0, at), port: apiServer.slice(at + 1) } };
}

/** A duration that must not be zero. */
function positiveMs(variable: keyof Env, text: string): number {
  const ms = parseDuration(text);
  if (!(ms > 0)) throw new ConfigError(variable, `must be greater than zero (got ${JSON.stringify(text)})`);
  return ms;
}

/** The runner container's model and proxy variables, as the chart set them. */
function runnerEnvironment(env: Env) {
  return {
    claudeModel: env.TETHER_RUNNER_CLAUDE_MODEL,
    anthropicBaseUrl: env.TETHER_RUNNER_ANTHROPIC_BASE_URL,
    httpsProxy: env.TETHER_RUNNER_HTTPS_PROXY,
    httpProxy: env.TETHER_RUNNER_HTTP_PROXY,
    noProxy: env.TETHER_RUNNER_NO_PROXY,
  };
}

/** Where runner Pods are scheduled, their extra labels, and their uids. */
function runnerPlacement(env: Env) {
  if (env.TETHER_RUNNER_UID === env.TETHER_RUNNER_AGENT_UID) {
    throw new ConfigError(
      'TETHER_RUNNER_AGENT_UID',
      'must differ from TETHER_RUNNER_UID (the agent may not be the supervisor)',
    );
  }
  return {
    priorityClassName: env.TETHER_RUNNER_PRIORITY_CLASS,
    nodeSelector: jsonObject('TETHER_RUNNER_NODE_SELECTOR', env.TETHER_RUNNER_NODE_SELECTOR),
    tolerations: jsonList('TETHER_RUNNER_TOLERATIONS', env.TETHER_RUNNER_TOLERATIONS),
    affinity: jsonObject('TETHER_RUNNER_AFFINITY', env.TETHER_RUNNER_AFFINITY),
    topologySpreadConstraints: jsonList('TETHER_RUNNER_TOPOLOGY_SPREAD', env.TETHER_RUNNER_TOPOLOGY_SPREAD),
    podLabels: podLabels('TETHER_RUNNER_POD_LABELS', env.TETHER_RUNNER_POD_LABELS),
    ids: { supervisor: env.TETHER_RUNNER_UID, agent: env.TETHER_RUNNER_AGENT_UID, group: env.TETHER_RUNNER_GID },
  };
}

/** What the runner Pods get: image, identity, volume, resources, network. */
function runnerSettings(env: Env) {
  return {
    /** Where runner Pods, their workspaces and identities live (default: the Sessions' namespace). */
    runnerNamespace: env.TETHER_RUNNER_NAMESPACE ?? env.TETHER_NAMESPACE,
    runnerImage: env.TETHER_RUNNER_IMAGE,
    runnerSecret: env.TETHER_RUNNER_SECRET,
    /** RuntimeClass of runner Pods (e.g. gvisor); unset → the cluster default. */
    ...(env.TETHER_RUNNER_RUNTIME_CLASS ? { runtimeClassName: env.TETHER_RUNNER_RUNTIME_CLASS } : {}),
    /** The install's permission policy (JSON over the runner's defaults), given to runners as
     * TETHER_PERMISSION_POLICY. */
    ...(env.TETHER_RUNNER_PERMISSION_POLICY
      ? {
          permissionPolicy: checked('TETHER_RUNNER_PERMISSION_POLICY', () =>
            checkedPolicy(env.TETHER_RUNNER_PERMISSION_POLICY!),
          ),
        }
      : {}),
    tokenExpirationSeconds: env.TETHER_RUNNER_SERVICE_ACCOUNT_TOKEN_SECONDS,
    pvc: { size: env.TETHER_PVC_SIZE, storageClass: env.TETHER_PVC_STORAGE_CLASS },
    resources: {
      requests: { cpu: env.TETHER_RUNNER_CPU_REQUEST, memory: env.TETHER_RUNNER_MEMORY_REQUEST },
      limits: { cpu: env.TETHER_RUNNER_CPU_LIMIT, memory: env.TETHER_RUNNER_MEMORY_LIMIT },
    },
    terminationGraceSeconds: env.TETHER_TERMINATION_GRACE_SECONDS,
    relayUrl: env.TETHER_RELAY_URL,
    githubApiUrl: env.GITHUB_API_URL,
    /** Hosts (host[:port]) and local folders a Session's repo.url may point at; the token goes nowhere else. */
    repoHosts: checked('TETHER_REPO_HOSTS', () => parseRepoHosts(env.TETHER_REPO_HOSTS)),
    /**
     * The host-network / loopback test tier (docs/chart.md): runner Pods on the node's network, told
     * the API server's address (host:port) instead of the `kubernetes` Service's virtual IP.
     */
    ...(env.TETHER_RUNNER_HOST_NETWORK ? { hostNetwork: hostNetwork(env.TETHER_RUNNER_API_SERVER) } : {}),
    runnerEnvironment: runnerEnvironment(env),
    /** The egress proxy runners go out through (egress-settings.ts); unset: none. */
    ...egressSettings(env),
    placement: runnerPlacement(env),
  };
}

/** The GitHub App, when the install authenticates as one: every variable of it, or none. */
function githubAppSettings(env: Env) {
  const given = [
    env.TETHER_GITHUB_APP_ID,
    env.TETHER_GITHUB_APP_INSTALLATION_ID,
    env.TETHER_GITHUB_APP_PRIVATE_KEY_FILE,
  ];
  if (given.every((value) => value === undefined)) {
    if (env.TETHER_GITHUB_RELAY_SECRET) throw new ConfigError('TETHER_GITHUB_RELAY_SECRET', 'needs a GitHub App');
    return {};
  }
  const missing = (
    ['TETHER_GITHUB_APP_ID', 'TETHER_GITHUB_APP_INSTALLATION_ID', 'TETHER_GITHUB_APP_PRIVATE_KEY_FILE'] as const
  ).find((name) => env[name] === undefined);
  if (missing) throw new ConfigError(missing, 'is needed with the other TETHER_GITHUB_APP_* variables');
  return {
    githubApp: {
      appId: env.TETHER_GITHUB_APP_ID!,
      installationId: env.TETHER_GITHUB_APP_INSTALLATION_ID!,
      privateKeyFile: env.TETHER_GITHUB_APP_PRIVATE_KEY_FILE!,
      apiUrl: (env.GITHUB_API_URL ?? DEFAULT_GITHUB_API_URL).replace(/\/$/, ''),
      /** The relay's token Secret (in TETHER_NAMESPACE), kept by the controller; unset: none. */
      relaySecret: env.TETHER_GITHUB_RELAY_SECRET,
    },
  };
}

/** Deadlines, history and the phone's limits. */
function sessionSettings(env: Env) {
  return {
    defaultRunTimeoutMs: positiveMs('TETHER_RUN_TIMEOUT', env.TETHER_RUN_TIMEOUT),
    defaultApprovalTimeoutMs: positiveMs('TETHER_APPROVAL_TIMEOUT', env.TETHER_APPROVAL_TIMEOUT),
    /** A runner Pod not started (its runner Working) this long after creation fails its Session. */
    startTimeoutMs: positiveMs('TETHER_START_TIMEOUT', env.TETHER_START_TIMEOUT),
    podTtlMs: parseDuration(env.TETHER_POD_TTL),
    /** A finished Session's runner Pod stays live this long for the phone's next command (0: off). */
    keepAliveMs: env.TETHER_RUNNER_KEEP_ALIVE === '0' ? 0 : parseDuration(env.TETHER_RUNNER_KEEP_ALIVE),
    historyCount: env.TETHER_HISTORY_COUNT,
    historyMaxAgeMs: positiveMs('TETHER_HISTORY_MAX_AGE', env.TETHER_HISTORY_MAX_AGE),
    maxQueued: env.TETHER_MAX_QUEUED,
    /** The phone's daily budget (the relay's, the same variables): a waiting command whose turn comes
     * over it ends OverBudget. */
    budget: {
      dailyUsd: Number(env.TETHER_DAILY_BUDGET_USD),
      timeZone: checked('TETHER_BUDGET_TIMEZONE', () => timeZone(env.TETHER_BUDGET_TIMEZONE)),
    },
    stallTimeoutMs: positiveMs('TETHER_STALL_TIMEOUT', env.TETHER_STALL_TIMEOUT),
  };
}

function configFrom(env: Env) {
  return {
    namespace: env.TETHER_NAMESPACE,
    /** The install's keyed phone hash (its key stays inside): names, labels, log lines. */
    phoneHash: phoneHasher(env.TETHER_PHONE_HASH_KEY),
    ...runnerSettings(env),
    ...githubAppSettings(env),
    ...sessionSettings(env),
    concurrency: env.TETHER_CONCURRENCY,
    metricsPort: env.TETHER_METRICS_PORT,
    metricsAddress: env.TETHER_METRICS_ADDRESS,
    leaderElection: env.TETHER_LEADER_ELECTION,
    leaseName: env.TETHER_LEASE_NAME,
    identity: env.POD_NAME ?? hostname(),
    logLevel: env.TETHER_LOG_LEVEL as string,
    /** Where to find the API server (kubeconfig, or the Pod's service account). */
    kube: {
      KUBECONFIG: env.KUBECONFIG,
      HOME: env.HOME,
      KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST,
      KUBERNETES_SERVICE_PORT: env.KUBERNETES_SERVICE_PORT,
    },
  };
}

export type ControllerConfig = ReturnType<typeof configFrom>;

export function loadConfig(source: EnvSource = process.env): ControllerConfig {
  return readConfig(CONTROLLER_ENV, source, configFrom);
}
