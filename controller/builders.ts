// Pure builders of the objects a Session needs: deterministic names, owner references,
// least privilege. Compared whole in test/unit/controller-builders.test.ts.
import type { V1Container, V1EnvVar, V1HostAlias, V1Pod, V1OwnerReference } from '@kubernetes/client-node';
import { SERVICE_ACCOUNT_DIR } from '../common/kube/connection.ts';
import { createHash } from 'node:crypto';
import {
  AGENT_SOCKET_DIR,
  ANNOTATION_RUNNER_KEY,
  AGENT_SOCKET_PATH,
  ANNOTATION_SESSION_UID,
  LABEL_COMPONENT,
  LABEL_PART_OF,
  LABEL_PHONE_HASH,
  LABEL_SESSION,
  LABEL_WORKSPACE,
  RUNNER_GIT_STORE,
  RUNNER_HOME,
  runnerIdentityName,
  runnerName,
} from '../common/session/names.ts';
import { API_VERSION, KIND, type Session } from '../common/session/schema.ts';
import type { ControllerConfig } from './config.ts';
import { containerSecurity, modelAndProxyEnv, placementSpec, podSecurity } from './runner-pod-spec.ts';
import { runnerNameSpec } from './runner-network.ts';
import { GITHUB_TOKEN_DIR, GITHUB_TOKEN_KEY } from './runner-token.ts';
import { runnerVolumes } from './runner-volumes.ts';
import { egressEnv, egressMounts } from './runner-egress.ts';

/**
 * The supervisor's entrypoint. CommonJS looks for a package it cannot find in node_modules in
 * $HOME/.node_modules and $HOME/.node_libraries too, and HOME is on the agent's volume: the flag
 * keeps the supervisor's modules to the image.
 */
export const RUNNER_COMMAND = ['node', '--no-global-search-paths', '/app/runner-image/main.ts'];
/** The agent container's entrypoint (under the image's tini): it runs only what the supervisor asks, by the channel. */
/** `--disable-sigusr1`: a SIGUSR1 from the agent's processes (the same uid) must not open Node's inspector in it. */
export const AGENT_HOST_COMMAND = ['node', '--disable-sigusr1', '/app/runner-image/agent-host/main.ts'];
export const WORKSPACE_PATH = '/workspace';
/** The agent container's own temporary folder, emptied by the agent host between two Sessions. */
export const AGENT_TMP_PATH = '/tmp';
export const RELAY_TOKEN_DIR = '/var/run/secrets/tether/relay';
/**
 * The supervisor: the Session's API client, the model proxy, diffs, images and publishing. The
 * configured resources are the agent container's, where Claude Code, builds and tests run.
 */
export const SUPERVISOR_RESOURCES = {
  requests: { cpu: '200m', memory: '512Mi' },
  limits: { cpu: '1', memory: '2Gi' },
} as const;
/** Keys read from the runner Secret into env vars of the same name. */
export const SECRET_KEYS = ['ANTHROPIC_API_KEY', 'GITHUB_TOKEN'] as const;

/** The install's settings, and the runner Pods' hostAliases as read from the cluster (runner-network.ts). */
export type BuilderConfig = { hostAliases?: V1HostAlias[] } & Pick<
  ControllerConfig,
  | 'phoneHash'
  | 'runnerNamespace'
  | 'runnerImage'
  | 'runnerSecret'
  | 'pvc'
  | 'resources'
  | 'terminationGraceSeconds'
  | 'relayUrl'
  | 'githubApiUrl'
  | 'tokenExpirationSeconds'
  | 'runtimeClassName'
  | 'permissionPolicy'
  | 'repoHosts'
  | 'hostNetwork'
  | 'runnerEnvironment'
  | 'placement'
  | 'githubApp'
  | 'keepAliveMs'
  | 'egress'
>;

function ownerReference(session: Session): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: session.metadata.name!,
    uid: session.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function runnerLabels(session: Session, config: Pick<ControllerConfig, 'phoneHash'>): Record<string, string> {
  return {
    [LABEL_SESSION]: session.metadata.name!,
    [LABEL_PHONE_HASH]: config.phoneHash(session.spec.phone),
    [LABEL_COMPONENT]: 'runner',
    [LABEL_PART_OF]: 'tether',
  };
}

/**
 * The runner Pod's metadata. An owner reference cannot cross namespaces (the garbage collector
 * would delete the Pod at once), so a Pod beside its Session is owned by it and a Pod in the
 * runner namespace is removed by the controller; both carry the Session's uid. A Pod kept live
 * for the phone's next Sessions (keep-alive) is owned by none of them: the first one's removal
 * must not take it from a later one; the controller removes it.
 */
function runnerMeta(session: Session, config: BuilderConfig, claim: string, replacement: number) {
  const owned = config.runnerNamespace === session.metadata.namespace && config.keepAliveMs === 0;
  return {
    name: runnerName(session.metadata.name!, replacement),
    namespace: config.runnerNamespace,
    // The install's labels never replace Tether's own (the config refuses them too).
    labels: { ...config.placement.podLabels, ...runnerLabels(session, config), [LABEL_WORKSPACE]: claim },
    annotations: { [ANNOTATION_SESSION_UID]: session.metadata.uid! },
    ...(owned ? { ownerReferences: [ownerReference(session)] } : {}),
  };
}

function runnerEnv(session: Session, config: BuilderConfig): V1EnvVar[] {
  const env: V1EnvVar[] = [
    { name: 'TETHER_SESSION_NAME', value: session.metadata.name! },
    { name: 'TETHER_SESSION_NAMESPACE', value: session.metadata.namespace! },
    { name: 'TETHER_WORKSPACE', value: WORKSPACE_PATH },
    { name: 'HOME', value: RUNNER_HOME },
    { name: 'TETHER_AGENT_HOME', value: `${WORKSPACE_PATH}/home` },
    { name: 'TETHER_GIT_STORE', value: RUNNER_GIT_STORE },
    { name: 'TETHER_RELAY_TOKEN_FILE', value: `${RELAY_TOKEN_DIR}/token` },
    { name: 'TETHER_AGENT_SOCKET', value: AGENT_SOCKET_PATH },
    { name: 'TETHER_POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
  ];
  // A live runner serves the phone's next Sessions bound to its Pod (docs/runner.md, "A live runner").
  if (config.keepAliveMs > 0) env.push({ name: 'TETHER_RUNNER_LIVE', value: 'true' });
  if (config.relayUrl) env.push({ name: 'TETHER_RELAY_URL', value: config.relayUrl });
  if (config.githubApiUrl) env.push({ name: 'GITHUB_API_URL', value: config.githubApiUrl });
  env.push({ name: 'TETHER_REPO_HOSTS', value: config.repoHosts.join(',') });
  env.push(...modelAndProxyEnv(config.runnerEnvironment));
  env.push(...egressEnv(config.egress));
  if (config.permissionPolicy) env.push({ name: 'TETHER_PERMISSION_POLICY', value: config.permissionPolicy });
  const apiServer = config.hostNetwork?.apiServer;
  if (apiServer) {
    // Over the Service address kubelet injects: on the host network the API server is reached directly.
    env.push(
      { name: 'KUBERNETES_SERVICE_HOST', value: apiServer.host },
      { name: 'KUBERNETES_SERVICE_PORT', value: apiServer.port },
    );
  }
  // With a GitHub App the runner's token is its own Secret's file, read at each use; no personal token.
  const keys = config.githubApp ? SECRET_KEYS.filter((key) => key !== 'GITHUB_TOKEN') : SECRET_KEYS;
  for (const key of keys) {
    env.push({ name: key, valueFrom: { secretKeyRef: { name: config.runnerSecret, key, optional: true } } });
  }
  if (config.githubApp) env.push({ name: 'GITHUB_TOKEN_FILE', value: `${GITHUB_TOKEN_DIR}/${GITHUB_TOKEN_KEY}` });
  return env;
}

/**
 * The agent container: a native sidecar (it starts first and keeps retrying the supervisor's
 * socket), its own uid, the workspace, the socket's folder and its own /tmp only — no Secret, no token, no
 * credential in its environment. Claude Code and every tool call run here.
 */
function agentContainer(config: BuilderConfig): V1Container {
  return {
    name: 'agent',
    image: config.runnerImage,
    imagePullPolicy: 'IfNotPresent',
    restartPolicy: 'Always',
    args: AGENT_HOST_COMMAND,
    workingDir: WORKSPACE_PATH,
    env: [
      { name: 'TETHER_AGENT_SOCKET', value: AGENT_SOCKET_PATH },
      { name: 'HOME', value: `${WORKSPACE_PATH}/home` },
      { name: 'TMPDIR', value: AGENT_TMP_PATH },
    ],
    resources: { requests: { ...config.resources.requests }, limits: { ...config.resources.limits } },
    securityContext: containerSecurity(config.placement.ids.agent, config.placement.ids),
    volumeMounts: [
      { name: 'workspace', mountPath: WORKSPACE_PATH },
      { name: 'agent-socket', mountPath: AGENT_SOCKET_DIR },
      { name: 'agent-tmp', mountPath: AGENT_TMP_PATH },
    ],
  };
}

/**
 * The runner Pod of a Session, mounting the workspace `claim` (workspace-claim.ts); `replacement`
 * counts the Pods made after the Session's Pod was lost. It carries the runner key (runnerKey).
 */
export function desiredPod(
  session: Session,
  config: BuilderConfig,
  claim = session.spec.workspace,
  replacement = 0,
): V1Pod {
  const pod = podOf(session, config, claim, replacement);
  pod.metadata!.annotations![ANNOTATION_RUNNER_KEY] = runnerKey(session, config, claim);
  return pod;
}

/**
 * A digest of everything in the runner Pod of `session` that is not that Session's: the Pod spec a
 * Session of no name would get (image, workspace, the install's settings, the phone's identity)
 * and the repository URL. A live Pod takes a Session only while its key is the one a new Pod would get.
 * A new egress key changes it too (a digest of the key goes in): a live Pod whose Secret holds a
 * password of the old key takes no more Sessions; so does a new egress URL, and a relay or proxy
 * Service made again with another address (hostAliases).
 */
export function runnerKey(session: Session, config: BuilderConfig, claim = session.spec.workspace): string {
  const anonymous = { ...session, metadata: { namespace: session.metadata.namespace, name: '-', uid: '-' } };
  const { spec } = podOf(anonymous, config, claim, 0);
  const egressKey = config.egress && createHash('sha256').update(config.egress.key).digest('hex');
  const digest = createHash('sha256').update(JSON.stringify({ spec, repo: session.spec.repo.url, egressKey }));
  return digest.digest('hex').slice(0, 32);
}

function podOf(session: Session, config: BuilderConfig, claim: string, replacement: number): V1Pod {
  const meta = runnerMeta(session, config, claim, replacement);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: meta,
    spec: {
      serviceAccountName: runnerIdentityName(config.phoneHash(session.spec.phone)),
      automountServiceAccountToken: false,
      ...(config.runtimeClassName ? { runtimeClassName: config.runtimeClassName } : {}),
      ...(config.hostNetwork ? { hostNetwork: true } : {}),
      ...runnerNameSpec(config.egress?.noDns !== undefined, config.hostAliases),
      enableServiceLinks: false,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: config.terminationGraceSeconds,
      ...placementSpec(config.placement),
      securityContext: podSecurity(config.placement.ids),
      initContainers: [agentContainer(config)],
      containers: [
        {
          name: 'runner',
          image: config.runnerImage,
          imagePullPolicy: 'IfNotPresent',
          args: RUNNER_COMMAND, // the image's entrypoint (tini) runs it
          workingDir: RUNNER_GIT_STORE,
          env: runnerEnv(session, config),
          resources: { requests: { ...SUPERVISOR_RESOURCES.requests }, limits: { ...SUPERVISOR_RESOURCES.limits } },
          securityContext: containerSecurity(config.placement.ids.supervisor, config.placement.ids),
          volumeMounts: [
            { name: 'workspace', mountPath: WORKSPACE_PATH },
            { name: 'git-store', mountPath: RUNNER_GIT_STORE },
            { name: 'runner-home', mountPath: RUNNER_HOME },
            { name: 'agent-socket', mountPath: AGENT_SOCKET_DIR },
            { name: 'kube-api-access', mountPath: SERVICE_ACCOUNT_DIR, readOnly: true },
            { name: 'relay-token', mountPath: RELAY_TOKEN_DIR, readOnly: true },
            ...(config.githubApp ? [{ name: 'github-token', mountPath: GITHUB_TOKEN_DIR, readOnly: true }] : []),
            ...egressMounts(config.egress),
          ],
        },
      ],
      volumes: runnerVolumes(config, claim, meta.name),
    },
  };
}
