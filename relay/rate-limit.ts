// Token buckets per key, in memory and bounded (a restarted relay starts afresh): the upload and
// download limits refuse a request over the rate, the outbox waits for its turn.
import { LRUCache } from 'lru-cache';

export interface RateOptions {
  /** requests per period, refilled evenly */
  count: number;
  periodMs: number;
  /** how many may go at once after a quiet spell; `count` by default */
  burst?: number;
  /** the clock (tests set it); Date.now by default */
  now?: () => number;
  /** keys kept; the least recently used go first */
  maxKeys?: number;
}

export class RateLimiter {
  private readonly msPerToken: number;
  private readonly burst: number;
  private readonly now: () => number;
  private readonly buckets: LRUCache<string, { tokens: number; at: number }>;

  constructor(options: RateOptions) {
    this.msPerToken = options.periodMs / options.count;
    this.burst = options.burst ?? options.count;
    this.now = options.now ?? Date.now;
    this.buckets = new LRUCache({ max: options.maxKeys ?? 10_000 });
  }

  /** Takes one request's worth for key; false (nothing taken) when the key is over its rate. */
  take(key = ''): boolean {
    const { tokens, now } = this.refilled(key);
    const allowed = tokens >= 1;
    this.buckets.set(key, { tokens: allowed ? tokens - 1 : tokens, at: now });
    return allowed;
  }

  /** Takes one request's worth for key even over the rate; returns how long to wait before using it. */
  reserve(key = ''): number {
    const { tokens, now } = this.refilled(key);
    this.buckets.set(key, { tokens: tokens - 1, at: now });
    return tokens >= 1 ? 0 : (1 - tokens) * this.msPerToken;
  }

  private refilled(key: string): { tokens: number; now: number } {
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    return { tokens: Math.min(this.burst, bucket.tokens + (now - bucket.at) / this.msPerToken), now };
  }
}
