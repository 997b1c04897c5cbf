import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoffDelay, createWorkQueue, type WorkHandler } from '../../common/kube/work-queue.ts';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('work queue', () => {
  it('de-duplicates keys that are queued and not yet picked up', async () => {
    const seen: string[] = [];
    const q = createWorkQueue({ handler: async (k) => void seen.push(k), concurrency: 1 });
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.depth).toBe(2);
    q.start();
    await vi.runAllTimersAsync();
    expect(seen).toEqual(['a', 'b']);
  });

  it('never runs one key on two workers; a change during processing runs it once more afterwards', async () => {
    const gate = deferred();
    let concurrent = 0;
    let maxConcurrent = 0;
    const runs: string[] = [];
    const handler: WorkHandler = async (k) => {
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      runs.push(k);
      if (runs.length === 1) await gate.promise;
      concurrent--;
    };
    const q = createWorkQueue({ handler, concurrency: 4 });
    q.start();
    q.add('a');
    await vi.advanceTimersByTimeAsync(0);
    q.add('a');
    q.add('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toEqual(['a']);
    gate.resolve();
    await vi.runAllTimersAsync();
    expect(runs).toEqual(['a', 'a']);
    expect(maxConcurrent).toBe(1);
  });

  it('runs different keys in parallel up to the concurrency limit', async () => {
    const gates = new Map<string, ReturnType<typeof deferred>>();
    const started: string[] = [];
    const q = createWorkQueue({
      concurrency: 2,
      handler: async (k) => {
        started.push(k);
        const g = deferred();
        gates.set(k, g);
        await g.promise;
      },
    });
    q.start();
    for (const k of ['a', 'b', 'c']) q.add(k);
    await vi.advanceTimersByTimeAsync(0);
    expect(started).toEqual(['a', 'b']);
    gates.get('a')!.resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(started).toEqual(['a', 'b', 'c']);
    gates.get('b')!.resolve();
    gates.get('c')!.resolve();
    await q.stop();
  });

  it('backs off per key exponentially from 5 ms to 5 min and resets after success', async () => {
    expect([1, 2, 3, 4].map((n) => backoffDelay(n, 5, 300_000))).toEqual([5, 10, 20, 40]);
    expect(backoffDelay(17, 5, 300_000)).toBe(300_000);
    expect(backoffDelay(1000, 5, 300_000)).toBe(300_000);

    const times: number[] = [];
    const retries: number[] = [];
    let fail = 4;
    const q = createWorkQueue({
      handler: async () => {
        times.push(Date.now());
        if (fail-- > 0) throw new Error('transient');
      },
      hooks: { retry: (_k, delay) => retries.push(delay) },
    });
    q.start();
    const t0 = Date.now();
    q.add('a');
    await vi.runAllTimersAsync();
    expect(retries).toEqual([5, 10, 20, 40]);
    expect(times.map((t) => t - t0)).toEqual([0, 5, 15, 35, 75]);
    expect(q.failures('a')).toBe(0);
  });

  it('requeues after the requested delay and keeps only the earliest timer', async () => {
    const times: number[] = [];
    let first = true;
    const q = createWorkQueue({
      handler: async () => {
        times.push(Date.now());
        if (first) {
          first = false;
          return { requeueAfterMs: 1000 };
        }
      },
    });
    q.start();
    const t0 = Date.now();
    q.add('a');
    await vi.advanceTimersByTimeAsync(0);
    q.addAfter('a', 5000);
    q.addAfter('a', 300);
    await vi.runAllTimersAsync();
    expect(times.map((t) => t - t0)).toEqual([0, 300]);
  });

  it('reports depth, latency and completion outcomes', async () => {
    const depths: number[] = [];
    const latencies: number[] = [];
    const outcomes: string[] = [];
    const q = createWorkQueue({
      concurrency: 1,
      handler: async (k) => {
        if (k === 'bad') throw new Error('x');
        return k === 'later' ? { requeueAfterMs: 10 } : undefined;
      },
      hooks: {
        depth: (d) => depths.push(d),
        latency: (ms) => latencies.push(ms),
        done: (_k, _ms, o) => outcomes.push(o),
      },
    });
    q.add('ok');
    q.add('later');
    q.add('bad');
    await vi.advanceTimersByTimeAsync(7);
    q.start();
    await vi.advanceTimersByTimeAsync(0);
    await q.stop();
    expect(depths.slice(0, 3)).toEqual([1, 2, 3]);
    expect(depths.at(-1)).toBe(0);
    expect(latencies[0]).toBe(7);
    expect(outcomes).toEqual(['ok', 'requeue', 'error']);
  });

  it('stop waits for the handler in flight and drops queued and delayed work', async () => {
    const gate = deferred();
    const runs: string[] = [];
    const q = createWorkQueue({
      concurrency: 1,
      handler: async (k) => {
        runs.push(k);
        if (k === 'a') await gate.promise;
      },
    });
    q.start();
    q.add('a');
    q.add('b');
    q.addAfter('c', 10);
    await vi.advanceTimersByTimeAsync(0);
    let stopped = false;
    const stopping = q.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    await vi.runAllTimersAsync();
    expect(runs).toEqual(['a']);
    q.add('d');
    expect(q.depth).toBe(0);
  });
});
