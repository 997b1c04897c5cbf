// The stand-in's HTTP plumbing: errors as GitHub words them, JSON answers with an ETag, and the
// conditional GET (If-None-Match → 304 with no body, which costs a client nothing).
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export class HttpError extends Error {
  readonly status: number;
  readonly errors?: unknown[];

  constructor(status: number, message: string, errors?: unknown[]) {
    super(message);
    this.status = status;
    if (errors) this.errors = errors;
  }
}

/** A path segment decoded; one that does not decode names nothing (404). */
export function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(404, 'Not Found');
  }
}

export const validationFailed = (errors: unknown[]) => new HttpError(422, 'Validation Failed', errors);

export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const DOCS = 'https://docs.github.com/rest';

export function errorBody(error: HttpError) {
  return { message: error.message, ...(error.errors ? { errors: error.errors } : {}), documentation_url: DOCS };
}

export const etagOf = (text: string) => `W/"${createHash('sha256').update(text).digest('hex').slice(0, 40)}"`;

const sameTag = (a: string, b: string) => a.replace(/^W\//, '') === b.replace(/^W\//, '');

/**
 * Writes the answer; a GET whose If-None-Match names the body's ETag gets 304 instead. `more` gives headers for
 * the status sent (the rate limit's). Returns that status.
 */
export function send(
  req: IncomingMessage,
  res: ServerResponse,
  answer: Answer,
  more: (status: number) => Record<string, string> = () => ({}),
): number {
  const text = answer.body === undefined ? '' : JSON.stringify(answer.body);
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'x-github-api-version-selected': '2022-11-28',
    ...answer.headers,
  };
  if (req.method === 'GET' && answer.status === 200) {
    const etag = etagOf(text);
    headers.etag = etag;
    const asked = req.headers['if-none-match'];
    if (asked && asked.split(',').some((tag) => sameTag(tag.trim(), etag))) {
      res.writeHead(304, { etag, ...more(304) });
      res.end();
      return 304;
    }
  }
  res.writeHead(answer.status, { ...headers, ...more(answer.status) });
  res.end(text);
  return answer.status;
}

/** The request's body as JSON (an empty body is {}); 400 on anything else. */
export function readJson(req: IncomingMessage, limit = 1024 * 1024): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > limit) return reject(new HttpError(413, 'Payload too big'));
      const text = Buffer.concat(chunks).toString('utf8');
      if (!text.trim()) return resolve({});
      try {
        const parsed = JSON.parse(text) as unknown;
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
        resolve(parsed as Record<string, unknown>);
      } catch {
        reject(new HttpError(400, 'Problems parsing JSON'));
      }
    });
  });
}
