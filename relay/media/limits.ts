// The relay's defences for uploads: per-key rate limits and a fixed number of upload slots. All in
// memory, all bounded; a restarted relay starts afresh.
import { LRUCache } from 'lru-cache';

/** A token bucket per key: `perMinute` requests, refilled evenly; at most `maxKeys` keys (least recent go first). */
export class RateLimiter {
  private readonly perMinute: number;
  private readonly now: () => number;
  private readonly buckets: LRUCache<string, { tokens: number; at: number }>;

  constructor(perMinute: number, now: () => number = Date.now, maxKeys = 10_000) {
    this.perMinute = perMinute;
    this.now = now;
    this.buckets = new LRUCache({ max: maxKeys });
  }

  /** Takes one request's worth for key; false when the key is over its rate. */
  take(key: string): boolean {
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    const tokens = Math.min(this.perMinute, bucket.tokens + ((now - bucket.at) * this.perMinute) / 60_000);
    const allowed = tokens >= 1;
    this.buckets.set(key, { tokens: allowed ? tokens - 1 : tokens, at: now });
    return allowed;
  }
}

/** A fixed number of slots overall and one per key; never waits: a taken slot is refused. */
export class UploadSlots {
  private readonly capacity: number;
  private readonly busy = new Set<string>();

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** 'full' when every slot is taken, 'busy' when key already holds one, else a release function. */
  take(key: string): (() => void) | 'full' | 'busy' {
    if (this.busy.has(key)) return 'busy';
    if (this.busy.size >= this.capacity) return 'full';
    this.busy.add(key);
    return () => this.busy.delete(key);
  }
}
