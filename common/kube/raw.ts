// Plain HTTP requests to the API server over a process's connection: JSON calls and newline-delimited
// watch streams. client-node's Watch aborts quiet watches, and its API classes take a second to load.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createInterface } from 'node:readline';
import type { KubeConnection } from './connection.ts';

/** A failed call: the API server's status code and its Status body, as `apiError()` reads them. */
export class HttpError extends Error {
  readonly code: number;
  readonly body: string;
  constructor(code: number, body: string) {
    super(`HTTP ${code}: ${body.slice(0, 500)}`);
    this.code = code;
    this.body = body;
  }
}

/** A kept-alive socket the server had closed: the request never reached it. */
class StaleSocket extends Error {}

/** The content type of a JSON merge patch (RFC 7386). */
export const MERGE_PATCH = 'application/merge-patch+json';

export type Query = Record<string, string | number | boolean | undefined>;

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  query?: Query;
  /** Sent as JSON. */
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

async function open(kube: KubeConnection, path: string, options: CallOptions): Promise<IncomingMessage> {
  const connection = kube;
  const url = new URL(connection.server + path);
  for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
  const base = await connection.requestOptions();
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers = {
    ...base.headers,
    Accept: 'application/json',
    'User-Agent': 'tether',
    ...(payload === undefined
      ? {}
      : { 'Content-Type': options.contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(payload) }),
  };
  const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = send(url, { ...base, method: options.method ?? 'GET', headers, signal: options.signal }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) {
        // Node records the error on res.errored; the consumer attaches its own handlers next tick.
        res.on('error', () => undefined);
        return resolve(res);
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => reject(new HttpError(status, body)));
      res.on('error', reject);
    });
    req.on('error', (error: NodeJS.ErrnoException) =>
      reject(
        req.reusedSocket && error.code === 'ECONNRESET' ? new StaleSocket(error.message, { cause: error }) : error,
      ),
    );
    req.end(payload);
  });
}

/**
 * A call other than create is sent again once if it met a kept-alive socket the server had closed.
 * (A watch is not: the informer restarts it, from where it was.)
 */
async function openFresh(kube: KubeConnection, path: string, options: CallOptions): Promise<IncomingMessage> {
  try {
    return await open(kube, path, options);
  } catch (error) {
    if (!(error instanceof StaleSocket)) throw error;
    if (options.method === 'POST') throw error.cause;
    return open(kube, path, options);
  }
}

/** The whole body, collected as buffers and decoded once (an async iterator per chunk costs more than the parse). */
function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.once('end', () =>
      resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')),
    );
    res.once('error', reject);
    res.once('close', () => reject(new Error('the API server closed the response before its end')));
    if (res.errored) reject(res.errored);
  });
}

export async function requestJson<T>(kube: KubeConnection, path: string, options: CallOptions = {}): Promise<T> {
  const body = await readBody(await openFresh(kube, path, options));
  return (body ? JSON.parse(body) : undefined) as T;
}

export const getJson = <T>(kube: KubeConnection, path: string, query: Query = {}, signal?: AbortSignal): Promise<T> =>
  requestJson<T>(kube, path, { query, signal });

/**
 * Streams newline-delimited JSON (a watch). Resolves when the server ends the stream,
 * rejects on transport errors or a non-2xx answer. `onData` fires for every chunk.
 */
export async function streamJsonLines(
  kube: KubeConnection,
  path: string,
  query: Query,
  onLine: (value: unknown) => void,
  signal: AbortSignal,
  onData?: () => void,
): Promise<void> {
  const res = await open(kube, path, { query, signal });
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      reject(error);
      res.destroy();
    };
    if (onData) res.on('data', onData);
    res.on('error', fail);
    res.on('aborted', () => fail(new Error('watch stream aborted')));
    if (res.errored) return fail(res.errored);
    const lines = createInterface({ input: res, crlfDelay: Infinity });
    lines.on('error', fail);
    lines.on('line', (line) => {
      if (failed || line.trim() === '') return;
      try {
        onLine(JSON.parse(line));
      } catch (error) {
        fail(error);
      }
    });
    lines.on('close', () => {
      if (failed) return;
      if (signal.aborted) reject(signal.reason ?? new Error('aborted'));
      else resolve();
    });
  });
}
