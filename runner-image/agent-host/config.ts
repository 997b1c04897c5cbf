// The agent host's configuration: the only reader of process.env in the agent container's entrypoint.
// The agent container holds no credential, so an environment that carries one is refused outright.
import { Type, type Static } from '@sinclair/typebox';
import { ConfigError, logRenamed, readConfig, type EnvSource } from '../../common/config/env.ts';
import { logLevel, renamedOf } from '../../common/config/values.ts';
import { CONNECT_TIMEOUT_MS, DEFAULT_SOCKET_PATH } from './protocol.ts';

export { ConfigError };

/** Variable names that carry credentials; none may reach the agent container. */
const CREDENTIAL_NAME = /TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL|KUBECONFIG/i;
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';
/** Set by the agent host for its re-exec'd self: the nonce of the reset that re-exec'd it. */
export const RESUMES_ENV = 'TETHER_AGENT_RESUMES';

export const AGENT_HOST_ENV = Type.Object({
  TETHER_AGENT_SOCKET: Type.String({
    pattern: '^/',
    default: DEFAULT_SOCKET_PATH,
    description: "an absolute path: the supervisor's agent channel socket",
  }),
  TETHER_AGENT_CONNECT_TIMEOUT_SECONDS: Type.Number({
    exclusiveMinimum: 0,
    default: CONNECT_TIMEOUT_MS / 1000,
    description: 'how long to keep trying to reach the supervisor',
  }),
  TETHER_LOG_LEVEL: logLevel(),
  TMPDIR: Type.Optional(
    Type.String({
      pattern: '^/.*[^/]$',
      description: "the agent container's own temporary folder, emptied at each reset (unset: resets are refused)",
    }),
  ),
  [RESUMES_ENV]: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$', description: 'set by the agent host only' })),
});

const configFrom = (env: Static<typeof AGENT_HOST_ENV>) => ({
  socketPath: env.TETHER_AGENT_SOCKET,
  /** How long to keep trying to reach the supervisor before giving up (exit 1). */
  connectTimeoutMs: env.TETHER_AGENT_CONNECT_TIMEOUT_SECONDS * 1000,
  logLevel: env.TETHER_LOG_LEVEL as string,
  tmpDir: env.TMPDIR,
  /** The nonce of the reset this process was re-exec'd by, which its hello carries. */
  resumes: env[RESUMES_ENV],
  /** Files whose presence means the container was given a credential (the agent host refuses to start). */
  credentialFiles: [SERVICE_ACCOUNT_TOKEN],
});

export type AgentHostConfig = ReturnType<typeof configFrom>;

export function parseConfig(env: EnvSource, onRenamed = logRenamed('agent-host')): AgentHostConfig {
  const carried = Object.keys(env).filter((name) => env[name] && CREDENTIAL_NAME.test(name));
  if (carried.length)
    throw new ConfigError(
      carried[0]!,
      `the agent container must hold no credential, but ${carried.join(', ')} ${carried.length > 1 ? 'are' : 'is'} set`,
    );
  return readConfig(AGENT_HOST_ENV, env, configFrom, { renamed: renamedOf('LOG_LEVEL'), onRenamed });
}

export function loadConfig(): AgentHostConfig {
  return parseConfig(process.env);
}

/** The environment the agent host re-execs itself with: its own, and the reset's nonce. */
export function reexecEnv(nonce: string): Record<string, string> {
  const own = Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined);
  return { ...Object.fromEntries(own), [RESUMES_ENV]: nonce };
}
