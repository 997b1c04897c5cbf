// The supervisor's model endpoint for the agent container: Claude Code there holds a dummy key and
// sends its Messages API calls here, on loopback (the Pod's containers share it); each is passed to
// the real API with the real key put in place of whatever credential the caller sent. The key
// never leaves this process except towards the upstream, and is never logged.
//
// Anything in the Pod's network namespace can call this proxy, so what it forwards is fixed: the
// upstream's origin and path prefix are chosen at start, only the calls Claude Code makes are
// passed on (modelCallRefusal), and each body is read whole and checked before a byte of it is sent
// (modelBodyRefusal). Everything else is answered 400 (or 413) here and reaches no network.
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { urlToHttpOptions } from 'node:url';
import type { Logger } from 'pino';
import type { ModelSpend } from './spend.ts';
import { errorBody } from '../scripted-model/sse.ts';
import { UsageTap } from './usage-tap.ts';
import { agentFor, type ProxyAgents } from '../egress/http.ts';
import { MESSAGES_API_MAX_BODY_BYTES, modelBodyRefusal } from './body.ts';

export interface ModelProxyOptions {
  /** The Messages API's base URL, e.g. https://api.anthropic.com or a gateway's https://gw.example/anthropic. */
  upstream: string;
  apiKey: string;
  log: Logger;
  /** Where each forwarded response's spend goes, read from its usage as it streams through. */
  spend: ModelSpend;
  /** The loopback port to bind (0 or unset: any free port). */
  port?: number;
  /** Set: calls to the upstream go through the egress proxy as the supervisor. */
  egress?: ProxyAgents;
}

export interface ModelProxy {
  url: string;
  spend: ModelSpend;
  close(): Promise<void>;
}

/** The Messages API calls Claude Code makes; its SDK marks beta calls with `?beta=true`. */
const MODEL_PATHS: ReadonlySet<string> = new Set(['/v1/messages', '/v1/messages/count_tokens']);
const MODEL_QUERIES: ReadonlySet<string> = new Set(['', '?beta=true']);

/** A request as it arrived: its method, its request target exactly as sent, and every Host header. */
export interface ModelCall {
  method: string;
  target: string;
  hosts: string[];
}

/**
 * Why a request is not forwarded, or undefined for one of Claude Code's calls: POST, one Host
 * header naming the proxy itself (`ownHost`, as Claude Code sends it), and a request target that is
 * exactly one of the Messages API paths. The target is compared as sent, before any decoding, so an
 * absolute-form target, `//host`, `.`/`..` segments (plain or percent-encoded), `@` or backslashes
 * are refused, never normalised into some other URL.
 */
export function modelCallRefusal(call: ModelCall, ownHost: string): string | undefined {
  if (call.method !== 'POST') return `${call.method} is not a Messages API call`;
  if (call.hosts.length !== 1 || call.hosts[0] !== ownHost) return `the Host header must be ${ownHost}`;
  if (!call.target.startsWith('/')) return 'a request target in absolute or authority form is not forwarded';
  const query = call.target.indexOf('?');
  const [path, search] = query < 0 ? [call.target, ''] : [call.target.slice(0, query), call.target.slice(query)];
  if (!MODEL_PATHS.has(path) || !MODEL_QUERIES.has(search))
    return `only POST ${[...MODEL_PATHS].join(' and ')} (optionally ?beta=true) are forwarded`;
  return undefined;
}

/** The upstream, fixed at start: http(s), with no credentials, query or fragment of its own. */
function upstreamBase(upstream: string): URL {
  const base = new URL(upstream);
  if (!/^https?:$/.test(base.protocol) || base.username || base.password || base.search || base.hash) {
    throw new Error('the model API base URL must be http(s) with no user, password, query or fragment');
  }
  return base;
}

/** Headers that belong to one hop, or carry the caller's (dummy) credential. */
const DROPPED = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'x-api-key',
  'authorization',
  'proxy-authorization',
]);

function forwardedHeaders(req: IncomingMessage, apiKey: string, body: Buffer): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers))
    if (!DROPPED.has(name) && value !== undefined) headers[name] = value;
  headers['content-length'] = body.length;
  headers['x-api-key'] = apiKey;
  return headers;
}

/** Every Host header the request carried (req.headers keeps only the first). */
const hostsOf = (req: IncomingMessage) =>
  req.rawHeaders.filter((_, i) => i % 2 === 1 && req.rawHeaders[i - 1]!.toLowerCase() === 'host');

function forward(options: ModelProxyOptions, base: URL, req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  // Built from the fixed upstream's parts: the caller only picks which allowed path is appended.
  const target = {
    ...urlToHttpOptions(base),
    path: base.pathname.replace(/\/$/, '') + req.url!,
    method: 'POST',
    headers: forwardedHeaders(req, options.apiKey, body),
    ...(options.egress ? { agent: agentFor(options.egress, base) } : {}),
  };
  const send = base.protocol === 'https:' ? httpsRequest : httpRequest;
  const upstream = send(target, (answer) => {
    const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !DROPPED.has(name)));
    res.writeHead(answer.statusCode ?? 502, headers);
    const tap = new UsageTap(answer.headers['content-type']);
    answer.on('data', (chunk: Buffer) => tap.write(chunk));
    // Counted once, whether the response ended or was cut off: what was received was served.
    let counted = false;
    const count = () => {
      if (!counted) {
        counted = true;
        options.spend.add(tap.end());
      }
    };
    answer.on('end', count);
    answer.on('close', count);
    answer.pipe(res);
  });
  upstream.on('error', (error) => {
    options.log.warn({ err: error, path: req.url }, 'model call failed on its way to the API');
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(errorBody('api_error', 'the model API could not be reached'));
  });
  res.on('close', () => upstream.destroy());
  upstream.end(body);
}

const refusalHeaders = (body: string) => ({
  'content-type': 'application/json',
  'content-length': Buffer.byteLength(body),
  connection: 'close',
});

/** The refusal's body, in the Messages API's error shape; the warning names the request, never the key or the body. */
function refusal(log: Logger, req: IncomingMessage, reason: string, type = 'invalid_request_error'): string {
  const hosts = hostsOf(req).map((host) => host.slice(0, 100));
  log.warn({ method: req.method, target: req.url?.slice(0, 200), hosts, reason }, 'model proxy refused a request');
  return errorBody(type, `Refused by the model proxy: ${reason}.`);
}

function refuse(log: Logger, req: IncomingMessage, res: ServerResponse, reason: string): void {
  const body = refusal(log, req, reason);
  res.writeHead(400, refusalHeaders(body)).end(body);
}

/** The whole request body, or undefined once it is larger than the API takes (the rest is not read). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  if (Number(req.headers['content-length']) > MESSAGES_API_MAX_BODY_BYTES) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const take = (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      if (size > MESSAGES_API_MAX_BODY_BYTES) {
        req.off('data', take).pause();
        resolve(undefined);
      }
    };
    req.on('data', take);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Reads the body of an allowed call and forwards it only if it asks nothing Claude Code does not. */
async function checkAndForward(options: ModelProxyOptions, base: URL, req: IncomingMessage, res: ServerResponse) {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity')
    return refuse(options.log, req, res, 'a compressed body is not read');
  const body = await readBody(req);
  if (body === undefined) {
    const limit = `the body is larger than the Messages API's ${MESSAGES_API_MAX_BODY_BYTES} bytes`;
    const answer = refusal(options.log, req, limit, 'request_too_large');
    return void res.writeHead(413, refusalHeaders(answer)).end(answer);
  }
  const reason = modelBodyRefusal(body);
  if (reason === undefined) forward(options, base, req, res, body);
  else refuse(options.log, req, res, reason);
}

/** CONNECT never reaches the request handler: it is answered on the socket, which is then closed. */
function refuseConnect(log: Logger, req: IncomingMessage, socket: Socket): void {
  const body = refusal(log, req, `${req.method} is not a Messages API call`);
  const head = Object.entries(refusalHeaders(body))
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 400 Bad Request\r\n${head}\r\n${body}`);
}

/**
 * Listens on 127.0.0.1 (the given port, or a free one) and forwards Claude Code's Messages API calls
 * to the upstream with the key.
 */
export async function startModelProxy(options: ModelProxyOptions): Promise<ModelProxy> {
  const base = upstreamBase(options.upstream);
  let ownHost = '';
  const server = createServer((req, res) => {
    const reason = modelCallRefusal({ method: req.method ?? '', target: req.url ?? '', hosts: hostsOf(req) }, ownHost);
    if (reason === undefined && options.spend.paused) {
      const body = errorBody(
        'rate_limit_error',
        'The run is paused at its spending limit until the user answers continue.',
      );
      res.writeHead(429, refusalHeaders(body)).end(body);
    } else if (reason === undefined) checkAndForward(options, base, req, res).catch(() => res.destroy());
    else refuse(options.log, req, res, reason);
  });
  server.on('connect', (req: IncomingMessage, socket: Socket) => refuseConnect(options.log, req, socket));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  ownHost = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  options.log.info({ url: `http://${ownHost}`, upstream: base.origin + base.pathname }, 'model proxy listening');
  return {
    url: `http://${ownHost}`,
    spend: options.spend,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
