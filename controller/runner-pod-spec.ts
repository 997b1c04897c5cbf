// The install's settings in a runner Pod (chart `runner.*`): security contexts with its uids,
// scheduling, extra labels, and the runner container's model and proxy variables.
import type { V1EnvVar, V1PodSpec, V1SecurityContext } from '@kubernetes/client-node';
import type { ControllerConfig } from './config.ts';

type Ids = ControllerConfig['placement']['ids'];

/** Pod Security "restricted": non-root, the workspace's group, seccomp. */
export const podSecurity = (ids: Ids) => ({
  runAsNonRoot: true,
  runAsUser: ids.supervisor,
  runAsGroup: ids.group,
  fsGroup: ids.group,
  seccompProfile: { type: 'RuntimeDefault' },
});

export const containerSecurity = (runAsUser: number, ids: Ids): V1SecurityContext => ({
  allowPrivilegeEscalation: false,
  privileged: false,
  runAsNonRoot: true,
  runAsUser,
  runAsGroup: ids.group,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
});

/** Scheduling fields of the Pod spec; each only when configured. */
export function placementSpec(placement: ControllerConfig['placement']): Partial<V1PodSpec> {
  const { priorityClassName, nodeSelector, tolerations, affinity, topologySpreadConstraints } = placement;
  return {
    ...(priorityClassName ? { priorityClassName } : {}),
    ...(nodeSelector ? { nodeSelector: nodeSelector as V1PodSpec['nodeSelector'] } : {}),
    ...(tolerations ? { tolerations: tolerations as V1PodSpec['tolerations'] } : {}),
    ...(affinity ? { affinity: affinity as V1PodSpec['affinity'] } : {}),
    ...(topologySpreadConstraints
      ? { topologySpreadConstraints: topologySpreadConstraints as unknown as V1PodSpec['topologySpreadConstraints'] }
      : {}),
  };
}

/**
 * The runner container's model and proxy variables. With a proxy, NODE_USE_ENV_PROXY makes the
 * supervisor's fetch and https calls (GitHub API, relay, the model proxy's upstream) honour it; its
 * API-server client has its own agent and goes direct. Claude Code's environment is built from these.
 */
export function modelAndProxyEnv(values: ControllerConfig['runnerEnvironment']): V1EnvVar[] {
  const env: V1EnvVar[] = [];
  const add = (name: string, value: string | undefined) => value && env.push({ name, value });
  add('TETHER_CLAUDE_MODEL', values.claudeModel);
  add('ANTHROPIC_BASE_URL', values.anthropicBaseUrl);
  add('HTTPS_PROXY', values.httpsProxy);
  add('HTTP_PROXY', values.httpProxy);
  add('NO_PROXY', values.noProxy);
  if (values.httpsProxy || values.httpProxy) add('NODE_USE_ENV_PROXY', '1');
  return env;
}
