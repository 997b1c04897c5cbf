// Read-modify-write against the API server's optimistic concurrency: a write that meets a 409 Conflict
// (the object changed since it was read) is tried again from a fresh read. One rule for every caller,
// after client-go's retry.RetryOnConflict.
import { isConflict } from './errors.ts';

/**
 * How many times one read-modify-write is tried before its conflict is thrown. Writers of one object
 * are few (the controller, the relay replicas, one runner), so ten attempts with the backoff below
 * (at most about 2.5 s in all) outlast any burst a real cluster produces; past that, the caller's own
 * retry (the work queue's backoff, the next delivery pass) takes over.
 */
export const CONFLICT_ATTEMPTS = 10;

/** Waits before attempt n (1-based after the first): random in [0, min(10 ms · 2^n, 500 ms)), so writers spread out. */
const backoffMs = (attempt: number) => Math.random() * Math.min(10 * 2 ** attempt, 500);

const DONE = Symbol('done');

/** What `mutate` returns when there is nothing to write: the result as it stands. */
export interface Done<R> {
  readonly [DONE]: true;
  readonly value: R;
}

export const done = <R>(value: R): Done<R> => ({ [DONE]: true, value });

const isDone = <R>(value: unknown): value is Done<R> => typeof value === 'object' && value !== null && DONE in value;

/**
 * `read` the object (attempt 0 may answer from a cache; later attempts must read the API server),
 * `mutate` it into what to write (or `done(result)`: nothing to write), `write` it with the read's
 * resourceVersion. Only a 409 Conflict tries again; any other error is thrown at once.
 */
export async function retryOnConflict<S, N, R>(
  read: (attempt: number) => Promise<S>,
  mutate: (current: S) => N | Done<R> | Promise<N | Done<R>>,
  write: (next: N, current: S) => Promise<R>,
): Promise<R> {
  for (let attempt = 0; ; attempt++) {
    const current = await read(attempt);
    const next = await mutate(current);
    if (isDone<R>(next)) return next.value;
    try {
      return await write(next, current);
    } catch (error) {
      if (!isConflict(error) || attempt + 1 >= CONFLICT_ATTEMPTS) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt + 1)));
  }
}
