// Supervision of the local stack's processes: an exit nobody asked for is restarted after a
// back-off (doubling, capped; reset once the process has run stably), with one plain line saying
// which component died, how (exit code or signal) and when it comes back. A component that keeps
// dying is a crash loop: one line says so and it is left down.
import type { Managed } from './control-plane/processes.ts';

export interface SupervisionPolicy {
  firstDelayMs: number;
  maxDelayMs: number;
  /** A process that ran this long starts the back-off over. */
  stableAfterMs: number;
  /** This many unexpected exits within crashWindowMs is a crash loop: no more restarts. */
  crashLimit: number;
  crashWindowMs: number;
}

export const SUPERVISION: SupervisionPolicy = {
  firstDelayMs: 1000,
  maxDelayMs: 30_000,
  stableAfterMs: 60_000,
  crashLimit: 5,
  crashWindowMs: 120_000,
};

export interface Supervised {
  /** The process running now (or the last one, while it is down). */
  current(): Managed;
  /** A restart someone asked for: stop, then start at once (no line, no back-off). */
  restart(graceMs?: number): Promise<void>;
  /** Stops the process and the supervision. */
  stop(graceMs?: number): Promise<void>;
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`;
const clock = (t: number) => new Date(t).toISOString().slice(11, 19);

function howItExited(proc: Managed, code: number | null): string {
  const signal = proc.child.signalCode;
  return signal ? `was killed by ${signal}` : `exited with code ${code}`;
}

/** Starts `start()` and keeps it running; `say` gets the supervision's lines. */
export async function supervise(
  name: string,
  start: () => Promise<Managed>,
  say: (line: string) => void,
  policy: SupervisionPolicy = SUPERVISION,
): Promise<Supervised> {
  let proc = await start();
  let startedAt = Date.now();
  let stopping = false;
  let delay = policy.firstDelayMs;
  let pending: NodeJS.Timeout | undefined;
  /** A restart after an exit, between its back-off and the new process's start. */
  let relaunching: Promise<void> | undefined;
  const exits: number[] = [];
  const asked = new WeakSet<Managed>(); // exits someone asked for

  const watch = (watched: Managed) => {
    void watched.exited.then((code) => {
      if (stopping || watched !== proc || asked.has(watched)) return;
      const now = Date.now();
      if (now - startedAt >= policy.stableAfterMs) delay = policy.firstDelayMs;
      exits.push(now);
      while (exits.length && exits[0]! < now - policy.crashWindowMs) exits.shift();
      const how = howItExited(watched, code);
      if (exits.length >= policy.crashLimit) {
        say(
          `${name} ${how} at ${clock(now)}: ${exits.length} exits within ${seconds(policy.crashWindowMs)} ` +
            'is a crash loop; not restarting it (see its log; restart make dev when fixed)',
        );
        return;
      }
      say(`${name} ${how} at ${clock(now)}; restarting it in ${seconds(delay)} (at ${clock(now + delay)})`);
      pending = setTimeout(() => {
        relaunching = relaunch()
          .catch((err: unknown) => say(`${name} could not be restarted: ${(err as Error).message}`))
          .finally(() => (relaunching = undefined));
      }, delay);
      delay = Math.min(policy.maxDelayMs, delay * 2);
    });
  };
  const relaunch = async () => {
    pending = undefined;
    if (stopping) return;
    proc = await start();
    startedAt = Date.now();
    if (stopping) return; // stop() waits for this start, then stops what it started
    say(`${name} restarted (pid ${proc.child.pid})`);
    watch(proc);
  };
  /** No restart after an exit is under way once this resolves. */
  const settled = async () => {
    clearTimeout(pending);
    await relaunching;
  };
  watch(proc);

  return {
    current: () => proc,
    async restart(graceMs = 10_000) {
      await settled();
      asked.add(proc);
      await proc.stop(graceMs);
      proc = await start();
      startedAt = Date.now();
      watch(proc);
    },
    async stop(graceMs = 10_000) {
      stopping = true;
      await settled();
      await proc.stop(graceMs);
    },
  };
}

/** The same handle for a process nobody restarts. */
export function unsupervised(proc: Managed): Supervised {
  return {
    current: () => proc,
    stop: (graceMs) => proc.stop(graceMs),
    restart: () => Promise.reject(new Error(`${proc.name} is not supervised`)),
  };
}
