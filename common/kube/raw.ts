// Plain HTTPS requests to the API server with the KubeConfig's credentials, for list and
// watch on arbitrary paths (client-node's Watch aborts a watch after 30 s without data; see docs/controller.md, "Informer").
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { createInterface } from 'node:readline';
import type { KubeConfig } from '@kubernetes/client-node';

/** Shaped like client-node's ApiException so `apiError()` reads it. */
export class HttpError extends Error {
  readonly code: number;
  readonly body: string;
  constructor(code: number, body: string) {
    super(`HTTP ${code}: ${body.slice(0, 500)}`);
    this.code = code;
    this.body = body;
  }
}

export type Query = Record<string, string | number | boolean | undefined>;

async function open(kc: KubeConfig, path: string, query: Query, signal?: AbortSignal) {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(cluster.server.replace(/\/$/, '') + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
  const options: RequestOptions = { method: 'GET', headers: { Accept: 'application/json' } };
  await kc.applyToHTTPSOptions(options);
  const plain = url.protocol === 'http:';
  if (plain) delete options.agent;
  const request = plain ? httpRequest : httpsRequest;
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(url, { ...options, signal }, (res) => {
      if (res.statusCode === 200) {
        // Node records the error on res.errored; the consumer attaches its own handlers next tick.
        res.on('error', () => undefined);
        return resolve(res);
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => reject(new HttpError(res.statusCode ?? 0, body)));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export async function getJson<T>(kc: KubeConfig, path: string, query: Query = {}, signal?: AbortSignal): Promise<T> {
  const res = await open(kc, path, query, signal);
  let body = '';
  res.setEncoding('utf8');
  for await (const chunk of res) body += chunk as string;
  return JSON.parse(body) as T;
}

/**
 * Streams newline-delimited JSON (a watch). Resolves when the server ends the stream,
 * rejects on transport errors or a non-200 answer. `onData` fires for every chunk.
 */
export async function streamJsonLines(
  kc: KubeConfig, path: string, query: Query, onLine: (value: unknown) => void,
  signal: AbortSignal, onData?: () => void,
): Promise<void> {
  const res = await open(kc, path, query, signal);
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
