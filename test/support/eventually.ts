// Retries an assertion until it passes or the time is up (then rethrows its last failure).
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 10_000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }
}
