// Child processes that never outlive the process that started them: each is started
// under `setpriv --pdeathsig KILL` (Linux: the kernel kills it when its parent dies, even
// by SIGKILL) and is killed on a normal exit.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, fchmodSync, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { inheritedEnv } from '../config.ts';

export interface Managed {
  name: string;
  child: ChildProcess;
  /** SIGTERM, then SIGKILL after graceMs. Resolves when the process has exited. */
  stop(graceMs?: number): Promise<void>;
  exited: Promise<number | null>;
  /** Sends a signal to the process (its whole group when started with `group`). */
  signal(sig: NodeJS.Signals): void;
}

const live = new Set<ChildProcess>();
let hooked = false;

function killAll() {
  for (const child of live) child.kill('SIGKILL');
}

function hookExit() {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAll);
}

const hasSetpriv = (() => {
  try {
    return spawnSync('setpriv', ['--help'], { stdio: 'pipe' }).status === 0 && process.platform === 'linux';
  } catch {
    return false;
  }
})();

export interface ManagedOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Own process group: stop() signals the whole group (the process and everything it started). */
  group?: boolean;
  /** Also hands every output line (stdout and stderr) to this callback. */
  onLine?: (line: string) => void;
  /** Run as this user (needs root and setpriv): uid, gid, supplementary groups; no new privileges. */
  user?: { uid: number; gid: number; groups: number[] };
  /** Enter this network namespace first (a path under /run/netns; needs root and nsenter). */
  netns?: string;
  /** Then this command prefix, which execs what follows it (a mount namespace of its own: mount-view.ts). */
  mountView?: string[];
}

function setprivArgs(options: ManagedOptions): string[] {
  const args = ['--pdeathsig', 'KILL'];
  const user = options.user;
  if (!user) return args;
  const groups = user.groups.length ? [`--groups=${user.groups.join(',')}`] : ['--clear-groups'];
  return [...args, `--reuid=${user.uid}`, `--regid=${user.gid}`, ...groups, '--no-new-privs'];
}

/**
 * Closes every descriptor above stderr, then execs what follows: a descriptor this process inherited
 * without close-on-exec (a pipe of the shell that started the stack) reaches no container, as a container
 * runtime gives a container stdin, stdout and stderr alone.
 */
const CLOSE_INHERITED = [
  'bash',
  '-c',
  'for fd in /proc/$$/fd/*; do fd=${fd##*/}; if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done; exec "$@"',
  'close-inherited',
];

/**
 * setpriv (when there is one) in front of the command, and the closing of inherited descriptors between them; in
 * front of that, the mount view, and nsenter for a network namespace of its own (first: the view hides /run/netns).
 */
function commandLine(bin: string, args: string[], options: ManagedOptions): [string, string[]] {
  if (!hasSetpriv) return [bin, args];
  const setpriv = ['setpriv', ...setprivArgs(options), '--', ...CLOSE_INHERITED, bin, ...args];
  // Each execs the next in place: the pid, and so the process group the stop signals, stay the same.
  const full = [
    ...(options.netns ? ['nsenter', `--net=${options.netns}`, '--'] : []),
    ...(options.mountView ?? []),
    ...setpriv,
  ];
  return [full[0]!, full.slice(1)];
}

/** A process's log: appended to, readable by the stack's own user only (0600, set on every open). */
function openLog(logFile: string): number {
  const fd = openSync(logFile, 'a', 0o600);
  fchmodSync(fd, 0o600);
  return fd;
}

export function startManaged(
  name: string,
  bin: string,
  args: string[],
  logFile: string,
  options: ManagedOptions = {},
): Managed {
  hookExit();
  if (options.user && !hasSetpriv)
    throw new Error(`${name}: running as uid ${options.user.uid} needs setpriv (util-linux)`);
  if (options.netns && !hasSetpriv)
    throw new Error(`${name}: a network namespace of its own needs setpriv and nsenter`);
  if (options.mountView && !hasSetpriv) throw new Error(`${name}: a mount namespace of its own needs setpriv`);
  const [cmd, cmdArgs] = commandLine(bin, args, options);
  const log = createWriteStream('', { fd: openLog(logFile) });
  const child = spawn(cmd, cmdArgs, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env ?? inheritedEnv(),
    cwd: options.cwd,
    detached: options.group ?? false,
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  if (options.onLine) {
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', options.onLine);
    }
  }
  const signal = (sig: NodeJS.Signals) => {
    if (options.group && child.pid) {
      try {
        process.kill(-child.pid, sig);
        return;
      } catch {
        // the group is gone already; fall back to the process itself
      }
    }
    child.kill(sig);
  };
  live.add(child);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      live.delete(child);
      resolve(code);
    });
  });
  const stop = async (graceMs = 5000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { name, child, stop, exited, signal };
}

/** Resolves once `url` answers 2xx; rejects when the process exits first or after timeoutMs. */
export async function untilHttpOk(url: string, proc: Managed, timeoutMs = 30_000, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null)
      throw new Error(`${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) before ${url} answered`);
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    if (Date.now() > deadline) throw new Error(`${proc.name} did not answer ${url} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
