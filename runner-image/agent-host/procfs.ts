// The processes this process can see, read from /proc: enough to find a process tree and its groups.
import { readFileSync, readdirSync, statSync } from 'node:fs';

export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
  /** The owner of /proc/<pid>: the process's effective uid. */
  uid: number;
  /** One-letter state; Z is a zombie (dead, waiting to be reaped). */
  state: string;
}

/** /proc/<pid>/stat: "pid (comm) state ppid pgrp session …"; comm may hold spaces and parentheses. */
export function parseStat(text: string): Omit<ProcessInfo, 'uid'> | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const [state, ppid, pgrp, session] = text.slice(close + 2).split(' ');
  const pid = Number.parseInt(text, 10);
  if (!state || !Number.isInteger(pid)) return undefined;
  return { pid, state, ppid: Number(ppid), pgrp: Number(pgrp), session: Number(session) };
}

/** Every process in this PID namespace's /proc (one that exits while being read is skipped). */
export function listProcesses(proc = '/proc'): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const name of readdirSync(proc)) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const stat = parseStat(readFileSync(`${proc}/${name}/stat`, 'utf8'));
      if (stat) found.push({ ...stat, uid: statSync(`${proc}/${name}`).uid });
    } catch {
      // exited between readdir and read
    }
  }
  return found;
}

/** The command name of a process, or undefined when it cannot be read. */
export function commandName(pid: number, proc = '/proc'): string | undefined {
  try {
    return readFileSync(`${proc}/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The owner (effective uid) of a process, or undefined when it cannot be read. */
export function ownerOf(pid: number, proc = '/proc'): number | undefined {
  try {
    return statSync(`${proc}/${pid}`).uid;
  } catch {
    return undefined;
  }
}

/** Every process below `root` (not `root` itself), following parent links. */
export function descendants(processes: readonly ProcessInfo[], root: number): Set<number> {
  const children = new Map<number, number[]>();
  for (const p of processes) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const found = new Set<number>();
  const queue = [...(children.get(root) ?? [])];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    if (found.has(pid)) continue;
    found.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}
