// The relay's defences for uploads: per-key rate limits, a bounded cache with expiry, and a fixed
// number of upload slots. All in memory, all bounded; a restarted relay starts afresh.

/** A token bucket per key: `perMinute` requests, refilled evenly; at most `maxKeys` keys (oldest go first). */
export class RateLimiter {
  private readonly perMinute: number;
  private readonly maxKeys: number;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(perMinute: number, maxKeys = 10_000) {
    this.perMinute = perMinute;
    this.maxKeys = maxKeys;
  }

  /** Takes one request's worth for key; false when the key is over its rate. */
  take(key: string, now = Date.now()): boolean {
    const bucket = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    const tokens = Math.min(this.perMinute, bucket.tokens + ((now - bucket.at) * this.perMinute) / 60_000);
    const allowed = tokens >= 1;
    this.buckets.delete(key);
    this.buckets.set(key, { tokens: allowed ? tokens - 1 : tokens, at: now });
    if (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    return allowed;
  }
}

/** Values that expire, each with its own TTL; at most `maxEntries` (the oldest are dropped). */
export class ExpiringCache<V> {
  private readonly maxEntries: number;
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(maxEntries: number) {
    this.maxEntries = maxEntries;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until > now) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: V, ttlMs: number, now = Date.now()): void {
    this.entries.delete(key);
    this.entries.set(key, { value, until: now + ttlMs });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
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
