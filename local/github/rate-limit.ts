// GitHub's primary rate limit, per token: `limit` requests an hour on the stand-in's clock, told
// in X-RateLimit-* headers on every answer; a 304 costs nothing; once spent, 403 until the reset.
import type { StandInClock } from './clock.ts';
import { HttpError } from './http.ts';

interface Window {
  used: number;
  resetAt: number;
}

export class RateLimits {
  limit: number;
  private readonly clock: StandInClock;
  private readonly windows = new Map<string, Window>();

  constructor(limit: number, clock: StandInClock) {
    this.limit = limit;
    this.clock = clock;
  }

  private windowOf(key: string): Window {
    const now = this.clock.now();
    const known = this.windows.get(key);
    if (known && known.resetAt > now) return known;
    const fresh = { used: 0, resetAt: now + 3_600_000 };
    this.windows.set(key, fresh);
    return fresh;
  }

  /** Throws GitHub's 403 when the caller's hour is spent. */
  check(key: string): void {
    const window = this.windowOf(key);
    if (window.used >= this.limit)
      throw new HttpError(403, 'API rate limit exceeded. Wait for the reset or use conditional requests.');
  }

  /** Counts an answer (not a 304) and gives its headers. */
  headers(key: string, status: number): Record<string, string> {
    const window = this.windowOf(key);
    if (status !== 304 && window.used < this.limit) window.used += 1;
    return {
      'x-ratelimit-limit': String(this.limit),
      'x-ratelimit-remaining': String(this.limit - window.used),
      'x-ratelimit-used': String(window.used),
      'x-ratelimit-reset': String(Math.ceil(window.resetAt / 1000)),
      'x-ratelimit-resource': 'core',
    };
  }
}
