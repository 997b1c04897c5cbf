// The supervisor's model endpoint for the agent container: Claude Code there holds a dummy key and
// sends its Messages API calls here, on loopback (the Pod's containers share it); each is passed to
// the real API with the real key put in place of whatever credential the caller sent. The key
// never leaves this process except towards the upstream, and is never logged.
import { createServer, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';

export interface ModelProxyOptions {
  /** The Messages API's base URL, e.g. https://api.anthropic.com. */
  upstream: string;
  apiKey: string;
  log: Logger;
}

export interface ModelProxy {
  url: string;
  close(): Promise<void>;
}

/** Headers that belong to one hop, or carry the caller's (dummy) credential. */
const DROPPED = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'x-api-key', 'authorization', 'proxy-authorization']);

function forwardedHeaders(req: IncomingMessage, apiKey: string): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (!DROPPED.has(name) && value !== undefined) headers[name] = value;
  headers['x-api-key'] = apiKey;
  return headers;
}

function forward(options: ModelProxyOptions, base: URL, req: IncomingMessage, res: ServerResponse): void {
  const target = new URL(base.pathname.replace(/\/$/, '') + (req.url ?? '/'), base);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const upstream = send(target, { method: req.method, headers: forwardedHeaders(req, options.apiKey) }, (answer) => {
    const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !DROPPED.has(name)));
    res.writeHead(answer.statusCode ?? 502, headers);
    answer.pipe(res);
  });
  upstream.on('error', (error) => {
    options.log.warn({ err: error, path: req.url }, 'model call failed on its way to the API');
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'the model API could not be reached' } }));
  });
  res.on('close', () => upstream.destroy());
  req.pipe(upstream);
}

/** Listens on 127.0.0.1 (a free port) and forwards every request to the upstream with the key. */
export async function startModelProxy(options: ModelProxyOptions): Promise<ModelProxy> {
  const base = new URL(options.upstream);
  const server = createServer((req, res) => forward(options, base, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  options.log.info({ url, upstream: base.origin }, 'model proxy listening');
  return {
    url,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
