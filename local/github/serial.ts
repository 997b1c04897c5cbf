// One thing at a time: the stand-in's requests, pushes and a test's own calls each run alone, so
// numbers and heads are never read half-changed. Work may queue more work (a push's synchronize
// starts the CI); `drained` waits until none is left.
/** Runs `work` when all work queued before it is done. */
export type InTurn = <T>(work: () => Promise<T>) => Promise<T>;

export class Serial {
  private tail: Promise<unknown> = Promise.resolve();
  private queued = 0;

  run<T>(work: () => Promise<T>): Promise<T> {
    this.queued += 1;
    const next = this.tail.then(work).finally(() => (this.queued -= 1));
    this.tail = next.catch(() => undefined);
    return next;
  }

  /** Resolves when nothing is queued, after waiting for `also` (e.g. deliveries in flight) each round. */
  async drained(also: () => Promise<void> = async () => undefined): Promise<void> {
    do {
      await this.tail;
      await also();
    } while (this.queued > 0);
  }
}
