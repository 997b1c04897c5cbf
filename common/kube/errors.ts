// Reading the API server's errors: the status code and the Status body of a failed call (raw.ts's
// HttpError; client-node's ApiException, which the local stack meets, has the same shape).

export interface ApiErrorInfo {
  code: number;
  reason?: string;
  message: string;
}

function parseBody(body: unknown): { reason?: string; message?: string } {
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as { reason?: string; message?: string };
    } catch {
      return { message: body };
    }
  }
  return (body ?? {}) as { reason?: string; message?: string };
}

/** The HTTP status, reason and message of an API error; undefined for anything else. */
export function apiError(error: unknown): ApiErrorInfo | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  const code = (error as { code: unknown }).code;
  if (typeof code !== 'number') return undefined;
  const body = parseBody((error as { body?: unknown }).body);
  return { code, reason: body.reason, message: body.message ?? String((error as { message?: unknown }).message) };
}

export const isNotFound = (error: unknown) => apiError(error)?.code === 404;
export const isConflict = (error: unknown) => apiError(error)?.code === 409;
export const isAlreadyExists = (error: unknown) => apiError(error)?.reason === 'AlreadyExists';
export const isForbidden = (error: unknown) => apiError(error)?.code === 403;

/**
 * How long a runner's first call is retried while refused (403): the controller grants the runner
 * its Session (the phone's Role) while it creates the Pod, and the API server's authorizer sees a
 * Role change moments after the write returns. Past this, a refusal is a real one.
 */
export const GRANT_GRACE_MS = 30_000;

/** `call`, again (100 ms, doubling to 2 s) while it is refused and `graceMs` has not passed. */
export async function onceGranted<T>(call: () => Promise<T>, graceMs = GRANT_GRACE_MS): Promise<T> {
  const deadline = Date.now() + graceMs;
  for (let wait = 100; ; wait = Math.min(2 * wait, 2000)) {
    try {
      return await call();
    } catch (error) {
      if (!isForbidden(error) || Date.now() + wait > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
