// The stand-in's clock: real time shifted by what a test moved it (token expiry, JWT iat/exp).
export interface StandInClock {
  /** Milliseconds since the epoch, as the stand-in sees it. */
  now(): number;
  /** Moves the stand-in's time forward by `ms` (tokens expire, JWTs age). */
  advance(ms: number): void;
}

export function standInClock(): StandInClock {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms) {
      offset += ms;
    },
  };
}

/** GitHub's timestamps: ISO 8601 to the second. */
export const isoSeconds = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
