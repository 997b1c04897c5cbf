// Reading Kubernetes API errors thrown by @kubernetes/client-node.

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
