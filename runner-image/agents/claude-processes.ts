// Where Claude Code's processes run: in the agent container through the agent channel (a Pod), or
// as the runner's own children (a runner started as a plain process, as integration tests do).
// Either way: the last lines of stderr are kept, and stopAll() leaves nothing of them running.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Options, SpawnedProcess } from '@anthropic-ai/claude-agent-sdk';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { AgentChannel, AgentProcess } from '../agent-channel/channel.ts';
import { onLines } from './lines.ts';
import { killTree, trackTree } from './process-group.ts';

const STDERR_LINES = 20;
const STOP_GRACE_MS = 1500;

export interface ClaudeProcesses {
  spawn: NonNullable<Options['spawnClaudeCodeProcess']>;
  /** The last lines Claude Code wrote to stderr. */
  readonly stderr: string[];
  stopAll(): Promise<void>;
}

function keepTail(stream: Readable, lines: string[]): void {
  void onLines(stream, (line) => {
    lines.push(line);
    if (lines.length > STDERR_LINES) lines.shift();
  }).catch(() => undefined);
}

/** Children of this process: a stop signals the whole tree, groups and processes. */
export function localProcesses(log: Logger): ClaudeProcesses {
  const children: ChildProcess[] = [];
  const stderr: string[] = [];
  return {
    stderr,
    spawn: (options) => {
      const child = spawn(options.command, options.args, {
        cwd: options.cwd,
        env: options.env,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      log.info({ pid: child.pid, agent: 'claude' }, 'agent started');
      trackTree(child);
      children.push(child);
      keepTail(child.stderr, stderr);
      return child;
    },
    stopAll: async () => {
      await Promise.all(children.map((c) => killTree(c, STOP_GRACE_MS)));
    },
  };
}

function stopGroup(spawned: AgentProcess): Promise<void> {
  if (spawned.exitCode !== null || spawned.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      spawned.kill('SIGKILL');
      resolve();
    }, STOP_GRACE_MS);
    spawned.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    spawned.kill('SIGTERM');
  });
}

/**
 * In the agent container: a stop signals Claude Code's process group there. Tool calls that
 * moved to groups of their own are the freeze's to stop (AgentChannel.freeze, at the changes gate).
 */
export function channelProcesses(channel: AgentChannel, log: Logger): ClaudeProcesses {
  const spawned: AgentProcess[] = [];
  const stderr: string[] = [];
  return {
    stderr,
    spawn: (options): SpawnedProcess => {
      const child = channel.spawn(options);
      child.once('spawn', () => log.info({ pid: child.pid, agent: 'claude', container: 'agent' }, 'agent started'));
      spawned.push(child);
      keepTail(child.stderr, stderr);
      return child;
    },
    stopAll: async () => {
      await Promise.all(spawned.map(stopGroup));
    },
  };
}
