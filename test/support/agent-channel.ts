// Helpers for the agent channel tests: the supervisor's side in the test process, the agent host
// as a real child process (optionally under another uid or in its own PID namespace), and the
// output of processes run through the channel.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../../common/log.ts';
import type { StagedImage } from '../../local/node-agent/image-store.ts';
import { AgentChannel, type AgentChannelOptions, type AgentProcess } from '../../runner-image/agent-channel/channel.ts';
import { stagedRunnerImage } from './local-images.ts';

export const REPO_ROOT = join(import.meta.dirname, '../..');
export const AGENT_HOST_MAIN = join(REPO_ROOT, 'runner-image/agent-host/main.ts');

/** A logger whose JSON lines are kept for assertions. */
export function capturedLogger(component: string) {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return {
    log: createLogger({ component, level: 'debug', destination }),
    lines,
    messages: () => lines.map((l) => `${l.msg} ${l.reason ?? ''}`),
  };
}

/** A folder for the socket that other uids can pass through (mkdtemp makes it 0700). */
export function socketFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tether-channel-'));
  chmodSync(dir, 0o755);
  return dir;
}

/** Whether this process may start the agent host in a PID namespace of its own (root, with unshare). */
export const canUnshare = (): boolean => {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

export interface AgentHostProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export interface HostOptions {
  socketPath: string;
  env?: Record<string, string>;
  /** Run as this uid/gid with no supplementary groups (needs root and setpriv), from the staged runner image. */
  uid?: number;
  /** The staged runner image (see stagedRunnerImage), which a uid other than root's runs. */
  image?: StagedImage;
  /** Run as PID 1 of a new PID namespace (needs root and unshare), as in a container. */
  ownPidNamespace?: boolean;
}

/** The agent host as the agent container would run it, with only the environment given. */
export function startAgentHost(options: HostOptions): AgentHostProcess {
  if (options.uid !== undefined && !options.image)
    throw new Error('an agent host under another uid runs from the staged runner image');
  let argv = options.image
    ? [options.image.node, join(options.image.app, 'runner-image/agent-host/main.ts')]
    : [process.execPath, AGENT_HOST_MAIN];
  if (options.uid !== undefined)
    argv = ['setpriv', `--reuid=${options.uid}`, `--regid=${options.uid}`, '--clear-groups', '--', ...argv];
  if (options.ownPidNamespace) argv = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child=SIGKILL', ...argv];
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    TETHER_AGENT_SOCKET: options.socketPath,
    TETHER_LOG_LEVEL: 'debug',
    ...options.env,
  };
  const child = spawn(argv[0]!, argv.slice(1), { cwd: '/', env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

export interface Pair {
  channel: AgentChannel;
  host: AgentHostProcess;
  supervisorLog: ReturnType<typeof capturedLogger>;
  socketPath: string;
  stop: () => Promise<void>;
}

/** The supervisor's channel and a connected agent host. */
export async function startPair(
  options: Partial<AgentChannelOptions> & Omit<HostOptions, 'socketPath'> = {},
): Promise<Pair> {
  const supervisorLog = capturedLogger('runner');
  const socketPath = join(socketFolder(), 'supervisor', 'agent.sock');
  const channel = await AgentChannel.listen({
    socketPath,
    log: supervisorLog.log,
    connectTimeoutMs: 20_000,
    freezeTimeoutMs: 10_000,
    ...options,
  });
  const image = options.uid === undefined ? undefined : await stagedRunnerImage();
  const host = startAgentHost({
    socketPath,
    env: options.env,
    uid: options.uid,
    image,
    ownPidNamespace: options.ownPidNamespace,
  });
  await channel.connected();
  const stop = async () => {
    await channel.close();
    if (host.child.exitCode === null) host.child.kill('SIGKILL');
    await host.exited;
  };
  return { channel, host, supervisorLog, socketPath, stop };
}

export interface Finished {
  stdout: Buffer;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

/** Everything a process run through the channel printed, and how it ended (after its output ended). */
export function finished(spawned: AgentProcess): Promise<Finished> {
  const stdout: Buffer[] = [];
  let stderr = '';
  let error: Error | undefined;
  spawned.stdout.on('data', (c: Buffer) => stdout.push(c));
  spawned.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  spawned.on('error', (e: Error) => (error = e));
  return new Promise((resolve) =>
    spawned.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
      resolve({ stdout: Buffer.concat(stdout), stderr, code, signal, error });
    }),
  );
}

/** Spawn options as the Agent SDK passes them. */
export const request = (
  command: string,
  args: string[],
  extra: { cwd?: string; env?: Record<string, string>; signal?: AbortSignal } = {},
) => ({
  command,
  args,
  cwd: extra.cwd,
  env: extra.env ?? { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  signal: extra.signal ?? new AbortController().signal,
});

/** Reads stdout until `count` lines have arrived. */
export function firstLines(spawned: AgentProcess, count: number): Promise<string[]> {
  let text = '';
  return new Promise((resolve, reject) => {
    const onData = (c: Buffer) => {
      text += c.toString();
      const lines = text.split('\n');
      if (lines.length > count) {
        spawned.stdout.off('data', onData);
        resolve(lines.slice(0, count));
      }
    };
    spawned.stdout.on('data', onData);
    spawned.once('exit', () => reject(new Error(`exited after ${JSON.stringify(text)}`)));
  });
}

export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A process that exists and is not a zombie (kill(pid, 0) also succeeds on zombies). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Running processes (in this PID namespace's view) whose command line is exactly `argv`. */
export function runningWithArgv(argv: string[]): number[] {
  const wanted = `${argv.join('\0')}\0`;
  return readdirSync('/proc')
    .filter((name) => /^[0-9]+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === wanted && running(pid);
      } catch {
        return false;
      }
    });
}
