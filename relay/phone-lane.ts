// One lane per phone: work for a phone (acting on its inbound messages, delivering its Session
// changes) runs one job at a time, in the order it was given, so replies keep their order.
// Phones do not wait for each other.

export class PhoneLanes {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `job` after every earlier job of this phone; the returned promise carries its outcome. */
  run<T>(phone: string, job: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(phone) ?? Promise.resolve();
    const result = previous.then(job);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(phone, tail);
    void tail.then(() => {
      if (this.tails.get(phone) === tail) this.tails.delete(phone);
    });
    return result;
  }

  /** Resolves when every job given so far, and every job those gave, has finished. */
  async idle(): Promise<void> {
    while (this.tails.size) await Promise.all(this.tails.values());
  }
}
