// At most `max` tasks at once; the others wait their turn, in order.

export type ConcurrencyLimit = <T>(task: () => Promise<T>) => Promise<T>;

export function concurrencyLimit(max: number): ConcurrencyLimit {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (running >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await task();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}
