// The agent host's configuration: the only reader of process.env in the agent container's entrypoint.
// The agent container holds no credential, so an environment that carries one is refused outright.
import { CONNECT_TIMEOUT_MS, DEFAULT_SOCKET_PATH } from './protocol.ts';

export interface AgentHostConfig {
  socketPath: string;
  /** How long to keep trying to reach the supervisor before giving up (exit 1). */
  connectTimeoutMs: number;
  logLevel: string;
  /** Files whose presence means the container was given a credential (the agent host refuses to start). */
  credentialFiles: string[];
}

export class ConfigError extends Error {}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'];
/** Variable names that carry credentials; none may reach the agent container. */
const CREDENTIAL_NAME = /TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL|KUBECONFIG/i;
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export function parseConfig(env: Record<string, string | undefined>): AgentHostConfig {
  const carried = Object.keys(env).filter((name) => env[name] && CREDENTIAL_NAME.test(name));
  if (carried.length)
    throw new ConfigError(
      `the agent container must hold no credential, but ${carried.join(', ')} ${carried.length > 1 ? 'are' : 'is'} set`,
    );
  const socketPath = env.TETHER_AGENT_SOCKET || DEFAULT_SOCKET_PATH;
  if (!socketPath.startsWith('/'))
    throw new ConfigError(`invalid TETHER_AGENT_SOCKET (got "${socketPath}"): must be an absolute path`);
  const seconds = Number(env.TETHER_AGENT_CONNECT_TIMEOUT_SECONDS || CONNECT_TIMEOUT_MS / 1000);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new ConfigError(
      `invalid TETHER_AGENT_CONNECT_TIMEOUT_SECONDS (got "${env.TETHER_AGENT_CONNECT_TIMEOUT_SECONDS}")`,
    );
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError(`invalid LOG_LEVEL (got "${logLevel}"): one of ${LOG_LEVELS.join(', ')}`);
  return { socketPath, connectTimeoutMs: seconds * 1000, logLevel, credentialFiles: [SERVICE_ACCOUNT_TOKEN] };
}

export function loadConfig(): AgentHostConfig {
  return parseConfig(process.env);
}
