// Claude Code runs in its own process group (detached), and puts each Bash tool call in a group of
// its own: a stop signals every group of the tree, so nothing the agent started outlives it.
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const live = new Set<number>();

/** pid → [ppid, pgid] of every live process, read from /proc. */
function processTable(): Map<number, [number, number]> {
  const table = new Map<number, [number, number]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid pgrp …; comm may contain spaces and parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z') table.set(Number(entry), [Number(ppid), Number(pgrp)]);
    } catch {
      // gone while reading
    }
  }
  return table;
}

/** The process groups of `root` and of all its descendants (never the runner's own group). */
export function treeGroups(root: number): Set<number> {
  const table = processTable();
  const own = table.get(process.pid)?.[1];
  const groups = new Set<number>([root]);
  const queue = [root];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const [pid, [ppid, pgid]] of table) {
      if (ppid !== parent) continue;
      if (pgid !== own) groups.add(pgid);
      queue.push(pid);
    }
  }
  return groups;
}

const signalGroup = (pgid: number, sig: NodeJS.Signals | 0) => {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false; // ESRCH: the group is gone
  }
};

/** Remembers a detached child so its tree dies with the runner, whatever way the runner exits. */
export function trackGroup(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined) return;
  if (live.size === 0) process.once('exit', killTrackedSync);
  live.add(pid);
  child.once('exit', () => live.delete(pid));
}

function killTrackedSync(): void {
  for (const pid of live) for (const group of treeGroups(pid)) signalGroup(group, 'SIGKILL');
}

/** SIGTERM every group of the child's tree, SIGKILL after graceMs what is left. */
export function killGroup(child: ChildProcess, graceMs = 1500): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return Promise.resolve();
  const groups = treeGroups(pid);
  if (![...groups].map((g) => signalGroup(g, 'SIGTERM')).some(Boolean)) return Promise.resolve();
  return new Promise((resolve) => {
    const since = Date.now();
    const timer = setInterval(() => {
      const started = signalGroup(pid, 0) ? [...treeGroups(pid)].filter((g) => !groups.has(g)) : []; // started while stopping
      for (const group of started) {
        groups.add(group);
        signalGroup(group, 'SIGTERM');
      }
      const left = [...groups].filter((g) => signalGroup(g, 0));
      if (left.length === 0) {
        clearInterval(timer);
        resolve();
      } else if (Date.now() - since > graceMs) {
        for (const group of left) signalGroup(group, 'SIGKILL');
        clearInterval(timer);
        resolve();
      }
    }, 50);
  });
}
