// One lane per phone: work for a phone (acting on its inbound messages, delivering its Session
// changes) runs one job at a time, in the order it was given, so replies keep their order.
// Phones do not wait for each other.
import pLimit, { type LimitFunction } from 'p-limit';

interface Lane {
  limit: LimitFunction;
  /** the outcome of the newest job given */
  last: Promise<unknown>;
}

export class PhoneLanes {
  private readonly lanes = new Map<string, Lane>();

  /** Runs `job` after every earlier job of this phone; the returned promise carries its outcome. */
  run<T>(phone: string, job: () => Promise<T>): Promise<T> {
    let lane = this.lanes.get(phone);
    if (!lane) this.lanes.set(phone, (lane = { limit: pLimit(1), last: Promise.resolve() }));
    const { limit } = lane;
    const result = limit(async () => {
      try {
        return await job();
      } finally {
        // Nothing queued behind this job: the lane goes; a later job opens a new one.
        if (limit.pendingCount === 0 && this.lanes.get(phone)?.limit === limit) this.lanes.delete(phone);
      }
    });
    lane.last = result.catch(() => undefined);
    return result;
  }

  /** Resolves when every job given so far, and every job those gave, has finished. */
  async idle(): Promise<void> {
    while (this.lanes.size) await Promise.all([...this.lanes.values()].map((lane) => lane.last));
  }
}
