// The runner's single writer of Session status: batched JSON merge patches through the status
// subresource, one field manager, optimistic (resourceVersion) with re-read and retry on 409
// (retryOnConflict).
// Every read and write runs in one queue, so the copy it holds only ever moves forward: a change
// the watch reports is re-read in that queue instead of being taken as it arrives.
import pLimit from 'p-limit';
import { isNotFound } from '../common/kube/errors.ts';
import { retryOnConflict } from '../common/kube/retry.ts';
import type { SessionClient } from '../common/kube/sessions.ts';
import { redactDeep, type Logger, type Redactor } from '../common/log.ts';
import { truncate } from '../common/session/display.ts';
import {
  LIMITS,
  type Pending,
  type Phase,
  type ProgressItem,
  type Result,
  type Session,
} from '../common/session/schema.ts';
import { isTerminal, transition, type Event } from '../common/session/state-machine.ts';
import type { EgressRecord } from '../common/session/status-schema.ts';
import type { ConnectionEvent } from '../common/egress/protocol.ts';
import { foldEgress } from './egress/records.ts';

/** The Session reached a terminal phase (or vanished) through someone else: stop, exit 0. */
export class SessionFinished extends Error {}

export interface StatusDeps {
  /** Writes under the runner's field manager. */
  sessions: SessionClient;
  namespace: string;
  name: string;
  redact: Redactor;
  log: Logger;
  /** Minimum gap between two progress-only writes. */
  batchMs?: number;
  now?: () => Date;
}

/** Wait before trying again when reading a change the watch reported failed. */
const REREAD_RETRY_MS = 1000;

const versionOf = (s: Session | undefined) => s?.metadata.resourceVersion;

export class StatusWriter {
  private readonly deps: StatusDeps;
  private latest: Session | undefined;
  private pendingPatch: Record<string, unknown> = {};
  private progress: ProgressItem[] = [];
  private egress: EgressRecord[] = [];
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Every read and write, one at a time. */
  private readonly queue = pLimit(1);
  private rereadQueued = false;
  private lastWrite = 0;
  /** The run's first progress line goes out at once: the phone's first sign of the agent at work. */
  private progressWritten = false;
  /** A background write found the Session ended, and the log said so. */
  private endNoted = false;
  private readonly listeners = new Set<(s: Session) => void>();
  writes = 0;

  constructor(deps: StatusDeps) {
    this.deps = deps;
  }

  get session(): Session | undefined {
    return this.latest;
  }

  get phase(): Phase | undefined {
    return this.latest?.status?.phase;
  }

  onChange(listener: (s: Session) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The watch saw this version. Unless it is the one held, the Session is read again in the queue:
   * a watch event may be older than a write that has already returned.
   */
  noticed(session: Session): void {
    if (versionOf(session) === versionOf(this.latest) || this.rereadQueued) return;
    this.rereadQueued = true;
    this.serially(() => {
      this.rereadQueued = false;
      return this.read('Session deleted');
    }).catch((error: unknown) => {
      if (error instanceof SessionFinished) return;
      this.deps.log.warn({ err: error }, 'session re-read failed; retrying');
      setTimeout(() => this.noticed(session), REREAD_RETRY_MS).unref();
    });
  }

  /** Reads the Session now (after any write in progress). */
  load(): Promise<Session> {
    return this.serially(() => this.read('Session not found'));
  }

  private serially<T>(step: () => Promise<T>): Promise<T> {
    return this.queue(step);
  }

  private async read(whenMissing: string): Promise<Session> {
    const session = await this.deps.sessions.get(this.deps.namespace, this.deps.name);
    if (!session) throw new SessionFinished(whenMissing);
    this.adopt(session);
    return session;
  }

  /** Takes a copy read or written in the queue; picks up existing progress once. */
  private adopt(session: Session): void {
    const first = !this.latest;
    if (first) {
      this.progress = [...(session.status?.progress ?? [])];
      this.egress = [...(session.status?.egress ?? [])];
      this.seq = Math.max(0, ...this.progress.map((p) => p.seq));
    }
    const changed = versionOf(session) !== versionOf(this.latest);
    this.latest = session;
    if (first || changed) for (const listener of this.listeners) listener(session);
  }

  /** Appends a progress line (bounded list, increasing seq); written with the next batch, the run's first at once. */
  addProgress(text: string): void {
    const clean = truncate(this.deps.redact(text.replace(/\s+/g, ' ').trim()), LIMITS.progressTextChars);
    if (!clean) return;
    this.seq += 1;
    this.progress = [...this.progress, { seq: this.seq, at: this.now(), text: clean }].slice(-LIMITS.progressItems);
    this.pendingPatch.progress = this.progress;
    if (this.progressWritten) return this.schedule();
    this.progressWritten = true;
    this.flushInBackground();
  }

  /** One connection through the egress proxy, folded into status.egress; written with the next batch. */
  recordEgress(event: ConnectionEvent): void {
    this.egress = foldEgress(this.egress, event);
    this.pendingPatch.egress = this.egress;
    this.schedule();
  }

  setResult(result: Partial<Result>): void {
    this.pendingPatch.result = { ...(this.pendingPatch.result as object | undefined), ...result };
    this.schedule();
  }

  setPending(pending: Pending | null): void {
    this.pendingPatch.pending = pending;
  }

  /**
   * Applies a lifecycle event through transition() and writes it at once. Returns false when the
   * state machine refuses it (for example the phase is already final).
   */
  async move(event: Event, message?: string): Promise<boolean> {
    const current = this.phase;
    const next = transition(current, event);
    if (!next.ok) {
      this.deps.log.warn({ phase: current, event: event.type }, next.error);
      if (isTerminal(current)) throw new SessionFinished(`Session is ${current}`);
      return false;
    }
    this.pendingPatch.phase = next.phase;
    if (next.effects.includes('SetCompletionTime')) {
      this.pendingPatch.completionTime = this.now();
      this.pendingPatch.pending = null; // nothing is asked of a finished Session
    }
    if (message !== undefined) this.setResult({ message: truncate(message, LIMITS.textChars) });
    this.deps.log.info({ from: current ?? '(new)', to: next.phase, reason: next.reason }, 'phase');
    await this.flush();
    return true;
  }

  private schedule(): void {
    if (this.timer) return;
    const wait = Math.max(0, this.lastWrite + (this.deps.batchMs ?? 400) - this.clock().getTime());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushInBackground();
    }, wait);
    this.timer.unref();
  }

  /**
   * A write nobody awaits: if it fails, its patch stays pending and goes with the next write. Once the
   * Session has ended (a cancel, the controller's timeout) nothing more is written, as expected: said once.
   */
  private flushInBackground(): void {
    this.flush().catch((error: unknown) => {
      if (!(error instanceof SessionFinished))
        return this.deps.log.error({ err: error }, 'status write failed; retried with the next write');
      if (this.endNoted) return;
      this.endNoted = true;
      this.deps.log.info({ reason: error.message }, 'the Session has ended: later status changes are not written');
    });
  }

  /** Writes whatever is pending now (serialised; safe to call concurrently). */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    return this.serially(() => this.write());
  }

  private async write(): Promise<void> {
    if (Object.keys(this.pendingPatch).length === 0) return;
    const patch = this.pendingPatch;
    this.pendingPatch = {};
    try {
      await this.send(redactDeep(patch, this.deps.redact));
    } catch (error) {
      const newer = this.pendingPatch;
      const result =
        patch.result || newer.result ? { ...(patch.result as object), ...(newer.result as object) } : undefined;
      this.pendingPatch = { ...patch, ...newer, ...(result ? { result } : {}) };
      throw error;
    }
  }

  private async send(status: Record<string, unknown>): Promise<void> {
    await retryOnConflict(
      async (attempt) =>
        attempt > 0 ? this.read('Session deleted') : (this.latest ?? (await this.read('Session not found'))),
      (held) => {
        if (isTerminal(held.status?.phase)) throw new SessionFinished(`Session is ${held.status?.phase}`);
        return status;
      },
      async (next, held) => {
        const written = await this.deps.sessions
          .patchStatus(this.deps.namespace, this.deps.name, next, versionOf(held))
          .catch((error: unknown) => {
            throw isNotFound(error) ? new SessionFinished('Session deleted') : error;
          });
        this.writes += 1;
        this.lastWrite = this.clock().getTime();
        this.adopt(written);
      },
    );
  }

  /** The runner's clock (deps.now). */
  clock(): Date {
    return this.deps.now?.() ?? new Date();
  }

  private now(): string {
    return this.clock().toISOString();
  }
}
