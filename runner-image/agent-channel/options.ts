// The agent channel's options, what it reports, and the check that no credential reaches the agent container.
import type { SpawnOptions } from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from 'pino';
import {
  CONNECT_TIMEOUT_MS,
  DEFAULT_SOCKET_PATH,
  FREEZE_WAIT_MS,
  type FrameType,
  type FreezeMode,
  type MessageOf,
} from '../agent-host/protocol.ts';

/** What the runner passes unless its configuration says otherwise. */
export const CHANNEL_DEFAULTS = {
  socketPath: DEFAULT_SOCKET_PATH,
  connectTimeoutMs: CONNECT_TIMEOUT_MS,
  /** The agent host's own wait after the kill, with margin for a loaded node. */
  freezeTimeoutMs: 3 * FREEZE_WAIT_MS,
} as const;

export interface AgentChannelOptions {
  socketPath: string;
  log: Logger;
  /** Without an agent host by then, the channel closes and every spawn fails. */
  connectTimeoutMs: number;
  /** How long freeze() waits for the agent host's answer. */
  freezeTimeoutMs: number;
  /** Values that must never reach the agent container (as they are now): a spawn request carrying one is refused. */
  secrets?: () => readonly string[];
}

export type AgentHostHello = MessageOf<typeof FrameType.Hello>;
export interface FreezeReport {
  mode: FreezeMode;
  killed: number;
  /** Killed but still not gone when the agent host stopped waiting: the freeze did not hold. */
  lingering: number;
}

export interface ResetReport extends FreezeReport {
  /** Entries removed from the agent container's temporary folder. */
  removed: number;
  /** The re-exec'd agent host: its process id and when its process image began. */
  pid: number;
  startedAt: number;
}

export interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (error: Error) => void;
}

/** Where a spawn request carries one of `secrets` (ignored when shorter than 4), or undefined. */
export function carriedSecret(
  secrets: readonly string[],
  options: SpawnOptions,
  env: Record<string, string>,
): string | undefined {
  const long = secrets.filter((s) => s.length >= 4);
  const carries = (text: string) => long.some((s) => text.includes(s));
  const variable = Object.keys(env).find((name) => carries(env[name]!) || carries(name));
  if (variable) return `environment variable ${variable}`;
  if (carries(options.command) || options.args.some(carries)) return 'command line';
  return options.cwd && carries(options.cwd) ? 'working directory' : undefined;
}
