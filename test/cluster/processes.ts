// Child processes that never outlive the process that started them: each is started
// under `setpriv --pdeathsig KILL` (Linux: the kernel kills it when its parent dies, even
// by SIGKILL) and is killed on a normal exit.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';

export interface Managed {
  name: string;
  child: ChildProcess;
  /** SIGTERM, then SIGKILL after graceMs. Resolves when the process has exited. */
  stop(graceMs?: number): Promise<void>;
  exited: Promise<number | null>;
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

export function startManaged(name: string, bin: string, args: string[], logFile: string, env?: NodeJS.ProcessEnv): Managed {
  hookExit();
  const [cmd, cmdArgs] = hasSetpriv ? ['setpriv', ['--pdeathsig', 'KILL', '--', bin, ...args]] : [bin, args];
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  live.add(child);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      live.delete(child);
      resolve(code);
    });
  });
  const stop = async (graceMs = 5000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { name, child, stop, exited };
}
