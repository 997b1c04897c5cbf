// Claude Code runs in the runner's process group (so whatever kills the Pod's processes kills it
// too) and puts each Bash tool call in a group of its own: a stop signals the whole tree, groups
// and processes, so nothing the agent started outlives it.
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

/**
 * What to signal for `root`'s tree: `-pgid` for a process leading a group of its own (Claude Code
 * puts each Bash tool call in one), the pid for a process in the runner's own group.
 */
export function treeTargets(root: number): Set<number> {
  const table = processTable();
  const own = table.get(process.pid)?.[1];
  const targets = new Set<number>();
  const queue = table.has(root) ? [root] : [];
  while (queue.length) {
    const pid = queue.shift()!;
    const pgid = table.get(pid)![1];
    targets.add(pgid === own ? pid : -pgid);
    for (const [child, [ppid]] of table) if (ppid === pid) queue.push(child);
  }
  return targets;
}

const send = (target: number, sig: NodeJS.Signals) => {
  try {
    process.kill(target, sig);
  } catch {
    // ESRCH: gone already
  }
};

const alive = (target: number): boolean => {
  try {
    process.kill(target, 0);
    return target < 0 || !readFileSync(`/proc/${target}/stat`, 'utf8').split(') ').at(-1)!.startsWith('Z');
  } catch {
    return false;
  }
};

/** Remembers a child so its tree dies with the runner, whatever way the runner exits. */
export function trackTree(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined) return;
  if (live.size === 0) process.once('exit', killTrackedSync);
  live.add(pid);
  child.once('exit', () => live.delete(pid));
}

function killTrackedSync(): void {
  for (const pid of live) for (const target of treeTargets(pid)) send(target, 'SIGKILL');
}

/** SIGTERM the child's whole tree, SIGKILL after graceMs what is left. */
export function killTree(child: ChildProcess, graceMs = 1500): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return Promise.resolve();
  const targets = treeTargets(pid);
  for (const target of targets) send(target, 'SIGTERM');
  return new Promise((resolve) => {
    const since = Date.now();
    const check = () => {
      const started = alive(pid) ? [...treeTargets(pid)].filter((t) => !targets.has(t)) : []; // started while stopping
      for (const target of started) {
        targets.add(target);
        send(target, 'SIGTERM');
      }
      const left = [...targets].filter(alive);
      if (left.length && Date.now() - since <= graceMs) return void setTimeout(check, 50);
      for (const target of left) send(target, 'SIGKILL');
      resolve();
    };
    check();
  });
}
