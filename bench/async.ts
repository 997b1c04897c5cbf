// Small async helpers of the controller benchmark.
import { apiError, isAlreadyExists } from '../common/kube/errors.ts';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `work` over `items`, `width` at a time. */
export async function pool<T>(items: T[], width: number, work: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i]!, i);
      }
    }),
  );
}

/** Retries transport errors and 429/5xx (the local apiserver drops HTTP/2 connections under load). */
export async function retrying<T>(call: () => Promise<T>, attempts = 8): Promise<T | undefined> {
  for (let n = 0; ; n++) {
    try {
      return await call();
    } catch (error) {
      if (isAlreadyExists(error)) return undefined;
      const code = apiError(error)?.code;
      if (n >= attempts || (code !== undefined && code !== 429 && code < 500)) throw error;
      await sleep(100 * 2 ** n);
    }
  }
}

export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}
