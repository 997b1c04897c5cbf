// Stopping every process of the agent container before the supervisor snapshots the workspace.
//
// namespace: the agent host runs in the container's own PID namespace (it is PID 1, or the child of
//   the container's init). kill(-1, SIGKILL) reaches every process of the namespace it may signal —
//   setsid'd and double-forked ones included — except itself and PID 1, and the kernel lets no
//   process fork while it runs. With no_new_privs (PSS restricted) no process there has another uid.
// groups: the local node agent runs containers as plain processes in the host's PID namespace, where
//   kill(-1) would reach every process of the user. Instead the agent host stops (SIGSTOP, so nothing
//   forks meanwhile) then kills every process of its own uid that is in the process group or session
//   of a process it spawned, or below itself by parent links; it repeats the search until nothing new
//   appears. A process that left its session (setsid) AND whose parent has exited — a double-forked
//   daemon — is re-parented to the host's init and escapes. See docs/runner.md ("Two containers").
// uid: the same, but the local node agent started this process under a uid of the Pod's own range
//   (not root, not its parent's): kill(-1) as that uid reaches every process of that uid — the
//   double-forked daemon included — and nothing else.
import { FREEZE_WAIT_MS, type FreezeMode } from './protocol.ts';
import { commandName, descendants, listProcesses, ownerOf, type ProcessInfo } from './procfs.ts';

/** Inits that run a container's entrypoint as their child. */
const CONTAINER_INITS = new Set(['tini', 'docker-init', 'dumb-init', 'catatonit']);
/** Rounds of search-and-stop before the kill (each round catches children forked before the stop). */
const STOP_ROUNDS = 20;
const POLL_MS = 20;

export interface Self {
  pid: number;
  ppid: number;
  uid: number | undefined;
  /** The uid of the process that started this one (undefined when it cannot be read). */
  parentUid: number | undefined;
}

/**
 * namespace when this process is PID 1 or was started by the container's init; else uid when it
 * runs under a uid given to it alone (neither root nor its parent's); else groups.
 */
export function detectFreezeMode(self: Self, initName = commandName(1)): FreezeMode {
  if (self.pid === 1) return 'namespace';
  if (self.ppid === 1 && initName !== undefined && CONTAINER_INITS.has(initName)) return 'namespace';
  const ownUid = self.uid !== undefined && self.uid !== 0 && self.parentUid !== undefined;
  return ownUid && self.uid !== self.parentUid ? 'uid' : 'groups';
}

/** This process, as detectFreezeMode reads it. */
export const thisProcess = (): Self => ({
  pid: process.pid,
  ppid: process.ppid,
  uid: process.getuid?.(),
  parentUid: ownerOf(process.ppid),
});

export interface FreezeResult {
  mode: FreezeMode;
  /** Processes found and killed. */
  killed: number;
  /** Killed but still not gone after the wait (a SIGKILL is pending for them). */
  lingering: number;
}

const signal = (pid: number, sig: NodeJS.Signals): void => {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
};

const alive = (p: ProcessInfo) => p.state !== 'Z';

async function waitGone(still: () => ProcessInfo[]): Promise<number> {
  const deadline = Date.now() + FREEZE_WAIT_MS;
  for (let left = still(); ; left = still()) {
    if (left.length === 0 || Date.now() > deadline) return left.length;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** kill(-1): every process this one may signal but itself (and PID 1), at once: none can fork meanwhile. */
async function freezeEverything(mode: 'namespace' | 'uid'): Promise<FreezeResult> {
  const uid = process.getuid?.();
  const reached = (p: ProcessInfo) => (mode === 'namespace' ? p.pid !== 1 : p.uid === uid);
  const others = () => listProcesses().filter((p) => p.pid !== process.pid && reached(p) && alive(p));
  const killed = others().length;
  signal(-1, 'SIGKILL');
  return { mode, killed, lingering: await waitGone(others) };
}

/** Processes of this uid in the given groups or sessions, or below this process. */
function reachable(groups: ReadonlySet<number>): ProcessInfo[] {
  const all = listProcesses();
  const below = descendants(all, process.pid);
  const uid = process.getuid?.();
  return all.filter(
    (p) =>
      p.pid !== process.pid &&
      alive(p) &&
      p.uid === uid &&
      (below.has(p.pid) || groups.has(p.pgrp) || groups.has(p.session)),
  );
}

async function freezeGroups(groups: ReadonlySet<number>): Promise<FreezeResult> {
  const stopped = new Set<number>();
  for (let round = 0; round < STOP_ROUNDS; round += 1) {
    const fresh = reachable(groups).filter((p) => !stopped.has(p.pid));
    if (fresh.length === 0) break;
    for (const p of fresh) {
      signal(p.pid, 'SIGSTOP');
      stopped.add(p.pid);
    }
  }
  for (const pid of stopped) signal(pid, 'SIGKILL');
  const left = () => listProcesses().filter((p) => stopped.has(p.pid) && alive(p));
  return { mode: 'groups', killed: stopped.size, lingering: await waitGone(left) };
}

/** Kills every process of the agent container this process can reach; `groups` are the spawned processes' groups. */
export function freezeAll(mode: FreezeMode, groups: ReadonlySet<number>): Promise<FreezeResult> {
  return mode === 'groups' ? freezeGroups(groups) : freezeEverything(mode);
}
