// The runner's single writer of Session status: batched JSON merge patches through the status
// subresource, one field manager, optimistic (resourceVersion) with re-read and retry on 409.
import { PatchStrategy, setHeaderOptions, type CustomObjectsApi } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isConflict, isNotFound } from '../common/kube/errors.ts';
import { GROUP, LIMITS, PLURAL, VERSION, type Pending, type Phase, type ProgressItem, type Result, type Session } from '../common/session/schema.ts';
import { isTerminal, transition, type Event } from '../common/session/state-machine.ts';
import { redactDeep, truncate, type Redactor } from './redact.ts';

export const FIELD_MANAGER = 'tether-runner';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The Session reached a terminal phase (or vanished) through someone else: stop, exit 0. */
export class SessionFinished extends Error {}

export interface StatusDeps {
  api: CustomObjectsApi;
  namespace: string;
  name: string;
  redact: Redactor;
  log: Logger;
  /** Minimum gap between two progress-only writes. */
  batchMs?: number;
  now?: () => Date;
}

const rvNumber = (s: Session | undefined) => Number(s?.metadata.resourceVersion ?? 0);

export class StatusWriter {
  private readonly deps: StatusDeps;
  private latest: Session | undefined;
  private pendingPatch: Record<string, unknown> = {};
  private progress: ProgressItem[] = [];
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private lastWrite = 0;
  private readonly listeners = new Set<(s: Session) => void>();
  writes = 0;

  constructor(deps: StatusDeps) {
    this.deps = deps;
  }

  private ref() {
    return { group: GROUP, version: VERSION, plural: PLURAL, namespace: this.deps.namespace, name: this.deps.name };
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

  /** Takes a server copy if it is newer than what we hold; picks up existing progress once. */
  observe(session: Session): void {
    if (this.latest && rvNumber(session) < rvNumber(this.latest)) return;
    if (!this.latest) {
      this.progress = [...(session.status?.progress ?? [])];
      this.seq = Math.max(0, ...this.progress.map((p) => p.seq));
    }
    this.latest = session;
    for (const listener of this.listeners) listener(session);
  }

  async load(): Promise<Session> {
    const session = await this.get();
    if (!session) throw new SessionFinished('Session not found');
    this.observe(session);
    return session;
  }

  private async get(): Promise<Session | undefined> {
    try {
      return (await this.deps.api.getNamespacedCustomObject(this.ref())) as Session;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Appends a progress line (bounded list, increasing seq); written with the next batch. */
  addProgress(text: string): void {
    const clean = truncate(this.deps.redact(text.replace(/\s+/g, ' ').trim()), LIMITS.progressTextChars);
    if (!clean) return;
    this.seq += 1;
    this.progress = [...this.progress, { seq: this.seq, at: this.now(), text: clean }].slice(-LIMITS.progressItems);
    this.pendingPatch.progress = this.progress;
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
    const wait = Math.max(0, this.lastWrite + (this.deps.batchMs ?? 400) - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch((error: unknown) => this.deps.log.error({ err: error }, 'batched status write failed; retried with the next write'));
    }, wait);
    this.timer.unref();
  }

  /** Writes whatever is pending now (serialised; safe to call concurrently). */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const run = this.chain.then(() => this.write());
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async write(): Promise<void> {
    if (Object.keys(this.pendingPatch).length === 0) return;
    const patch = this.pendingPatch;
    this.pendingPatch = {};
    try {
      await this.send(redactDeep(patch, this.deps.redact));
    } catch (error) {
      const newer = this.pendingPatch;
      const result = patch.result || newer.result ? { ...(patch.result as object), ...(newer.result as object) } : undefined;
      this.pendingPatch = { ...patch, ...newer, ...(result ? { result } : {}) };
      throw error;
    }
  }

  private async send(status: Record<string, unknown>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (!this.latest) await this.load();
      if (isTerminal(this.phase)) throw new SessionFinished(`Session is ${this.phase}`);
      const body = { metadata: { resourceVersion: this.latest!.metadata.resourceVersion }, status };
      try {
        const written = (await this.deps.api.patchNamespacedCustomObjectStatus({ ...this.ref(), body, fieldManager: FIELD_MANAGER }, mergePatch)) as Session;
        this.writes += 1;
        this.lastWrite = Date.now();
        this.observe(written);
        return;
      } catch (error) {
        if (isNotFound(error)) throw new SessionFinished('Session deleted');
        if (!isConflict(error) || attempt >= 20) throw error;
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(25 * attempt, 250)));
        const fresh = await this.get();
        if (!fresh) throw new SessionFinished('Session deleted');
        this.observe(fresh);
      }
    }
  }

  private now(): string {
    return (this.deps.now?.() ?? new Date()).toISOString();
  }
}
