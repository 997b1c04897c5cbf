// A keyed, de-duplicating work queue in the manner of client-go's workqueue: a key is
// queued at most once, handled by at most one worker at a time (a change during
// processing re-queues it once afterwards), retried with per-key exponential backoff.

export interface WorkResult {
  /** Handle the key again after this many milliseconds (timeouts, TTLs). */
  requeueAfterMs?: number;
}

export type WorkHandler = (key: string) => Promise<WorkResult | void>;

export interface WorkQueueHooks {
  depth?: (depth: number) => void;
  /** Time from being queued to a worker picking the key up. */
  latency?: (ms: number) => void;
  /** A worker took the key: its handler starts now. */
  started?: (key: string) => void;
  /** A handler threw; the key is retried after delayMs. */
  retry?: (key: string, delayMs: number, error: unknown) => void;
  /** A handler finished (successfully or not) after ms. */
  done?: (key: string, ms: number, outcome: 'ok' | 'requeue' | 'error') => void;
}

export interface WorkQueueOptions {
  handler: WorkHandler;
  concurrency?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  hooks?: WorkQueueHooks;
  now?: () => number;
}

export interface WorkQueue {
  add(key: string): void;
  addAfter(key: string, delayMs: number): void;
  /** Starts the workers. Keys added before start wait until then. */
  start(): void;
  /** Stops taking new work and waits for the handlers in flight. */
  stop(): Promise<void>;
  readonly depth: number;
  readonly failures: (key: string) => number;
}

/** setTimeout cannot wait longer (it would fire at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export function backoffDelay(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 40));
}

export function createWorkQueue(options: WorkQueueOptions): WorkQueue {
  const concurrency = options.concurrency ?? 4;
  const baseMs = options.baseDelayMs ?? 5;
  const maxMs = options.maxDelayMs ?? 300_000;
  const hooks = options.hooks ?? {};
  const now = options.now ?? Date.now;

  const queue: string[] = [];
  const queuedAt = new Map<string, number>();
  const processing = new Set<string>();
  const dirty = new Set<string>();
  const failures = new Map<string, number>();
  const timers = new Map<string, { at: number; timer: ReturnType<typeof setTimeout> }>();
  const inFlight = new Set<Promise<void>>();
  let running = false;
  let stopped = false;

  const reportDepth = () => hooks.depth?.(queue.length);

  function add(key: string): void {
    if (stopped) return;
    if (processing.has(key)) {
      dirty.add(key);
      return;
    }
    if (queuedAt.has(key)) return;
    queuedAt.set(key, now());
    queue.push(key);
    reportDepth();
    pump();
  }

  function addAfter(key: string, delayMs: number): void {
    if (stopped) return;
    if (delayMs <= 0) return add(key);
    delayMs = Math.min(delayMs, MAX_TIMER_MS);
    const at = now() + delayMs;
    const existing = timers.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      timers.delete(key);
      add(key);
    }, delayMs);
    timer.unref?.();
    timers.set(key, { at, timer });
  }

  function pump(): void {
    while (running && !stopped && processing.size < concurrency && queue.length > 0) {
      const key = queue.shift()!;
      hooks.latency?.(now() - queuedAt.get(key)!);
      queuedAt.delete(key);
      processing.add(key);
      reportDepth();
      hooks.started?.(key);
      const work = handle(key);
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    }
  }

  async function handle(key: string): Promise<void> {
    const started = now();
    let outcome: 'ok' | 'requeue' | 'error' = 'ok';
    try {
      const result = await options.handler(key);
      failures.delete(key);
      if (result?.requeueAfterMs !== undefined) {
        outcome = 'requeue';
        addAfter(key, result.requeueAfterMs);
      }
    } catch (error) {
      outcome = 'error';
      const count = (failures.get(key) ?? 0) + 1;
      failures.set(key, count);
      const delay = backoffDelay(count, baseMs, maxMs);
      hooks.retry?.(key, delay, error);
      addAfter(key, delay);
    } finally {
      hooks.done?.(key, now() - started, outcome);
      processing.delete(key);
      if (dirty.delete(key)) add(key);
      pump();
    }
  }

  return {
    add,
    addAfter,
    start() {
      running = true;
      pump();
    },
    async stop() {
      stopped = true;
      for (const { timer } of timers.values()) clearTimeout(timer);
      timers.clear();
      queue.length = 0;
      queuedAt.clear();
      await Promise.allSettled([...inFlight]);
    },
    get depth() {
      return queue.length;
    },
    failures: (key) => failures.get(key) ?? 0,
  };
}
