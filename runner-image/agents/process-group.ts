// Agent processes run in their own process group (detached) so a stop kills everything they started.
import type { ChildProcess } from 'node:child_process';

const live = new Set<number>();

/** Remembers a detached child's group so it dies with the runner, whatever way the runner exits. */
export function trackGroup(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined) return;
  if (live.size === 0) process.once('exit', killTrackedSync);
  live.add(pid);
  child.once('exit', () => live.delete(pid));
}

function killTrackedSync(): void {
  for (const pid of live) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** SIGTERM the whole group, SIGKILL it after graceMs if anything is left. */
export function killGroup(child: ChildProcess, graceMs = 1500): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return Promise.resolve();
  const signal = (sig: NodeJS.Signals | 0) => {
    try {
      process.kill(-pid, sig);
      return true;
    } catch {
      return false; // ESRCH: the group is gone
    }
  };
  if (!signal('SIGTERM')) return Promise.resolve();
  return new Promise((resolve) => {
    const started = Date.now();
    const timer = setInterval(() => {
      if (!signal(0)) {
        clearInterval(timer);
        resolve();
      } else if (Date.now() - started > graceMs) {
        signal('SIGKILL');
        clearInterval(timer);
        resolve();
      }
    }, 50);
  });
}
