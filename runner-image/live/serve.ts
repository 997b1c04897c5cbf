// What a runner process serves: its first Session and, for a live runner, each later Session the
// controller binds to its Pod — the agent container reset between two — until it is stopped while
// idle (exit 0), a run does not end well (its exit code), or no further Session can come.
import type { Logger } from '../../common/log.ts';

/** One Session's run: resolves with the exit code (0 once a final phase is on the Session, or it is gone). */
export interface SessionRun {
  done: Promise<number>;
  stop(reason: string): void;
}

export interface LiveParts {
  /** Leaves nothing of the last Session's agent running or in its temporary folder; rejects when that fails. */
  resetAgent(): Promise<void>;
  /** The next Session bound to this Pod; undefined once the signal aborts or none can come. */
  next(signal: AbortSignal): Promise<string | undefined>;
  /** Ends the idle watch. */
  close(): void;
}

export interface ServeDeps {
  first: string;
  runSession(name: string): SessionRun;
  /** Set: a live runner. Made once the first Session has run (it names the phone's Role). */
  live?: () => LiveParts | undefined;
  log: Logger;
  now: () => Date;
}

export class Serve {
  private readonly deps: ServeDeps;
  private current: SessionRun | undefined;
  private readonly idle = new AbortController();
  private stopped = false;
  /** Sessions run by this process, the first included. */
  served = 0;

  constructor(deps: ServeDeps) {
    this.deps = deps;
  }

  async run(): Promise<number> {
    let name: string | undefined = this.deps.first;
    let live: LiveParts | undefined;
    try {
      while (name !== undefined) {
        const code = await this.runOne(name);
        if (code !== 0 || this.stopped || !this.deps.live) return code;
        live ??= this.deps.live();
        if (!live) return 0;
        name = await this.idleUntilNext(live);
      }
      return 0;
    } finally {
      live?.close();
    }
  }

  /** Stops the running Session (which then writes its final status), or the wait for the next one. */
  stop(reason: string): void {
    this.stopped = true;
    this.current?.stop(reason);
    this.idle.abort(reason);
  }

  private async runOne(name: string): Promise<number> {
    this.current = this.deps.runSession(name);
    this.served += 1;
    try {
      return await this.current.done;
    } finally {
      this.current = undefined;
    }
  }

  private async idleUntilNext(live: LiveParts): Promise<string | undefined> {
    const { log, now } = this.deps;
    const started = now().getTime();
    await live.resetAgent();
    log.info({ ms: now().getTime() - started }, 'agent container reset; waiting for the next Session bound here');
    const next = this.stopped ? undefined : await live.next(this.idle.signal);
    log.info({ next, idleMs: now().getTime() - started }, next ? 'a Session is bound here' : 'no next Session');
    return next;
  }
}
