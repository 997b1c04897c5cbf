// Absolute-form plain HTTP (`GET http://host:port/path`): the caller authenticated, the destination
// admitted, then the request forwarded over http to the checked address, its hop-by-hop headers and
// Proxy-Authorization left out both ways.
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { admit } from './admit.ts';
import { authenticate, type Caller } from './callers.ts';
import { refuseResponse, UNAUTHENTICATED } from './replies.ts';
import { parseAbsoluteUrl, type Target } from './target.ts';
import { tracked, type ProxyDeps } from './tunnel.ts';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** rawHeaders without the hop-by-hop ones and those the Connection header names. */
export function endToEnd(raw: readonly string[]): string[] {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.toLowerCase() === 'connection')
      for (const n of raw[i + 1]!.split(',')) named.add(n.trim().toLowerCase());
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (!HOP_BY_HOP.has(name) && !named.has(name)) out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}

const hostHeader = (t: Target) =>
  `${t.host.includes(':') ? `[${t.host}]` : t.host}${t.port === 80 ? '' : `:${t.port}`}`;

function forward(
  deps: ProxyDeps,
  caller: Caller,
  req: IncomingMessage,
  res: ServerResponse,
  address: string,
  t: Target,
) {
  let bytes = 0;
  let finished = false;
  const upstream = request({
    host: address,
    port: t.port,
    method: t.method,
    path: t.path,
    headers: [...endToEnd(req.rawHeaders), 'Host', hostHeader(t)] as unknown as Record<string, string>,
    setHost: false,
    agent: false,
    timeout: deps.idleMs,
  });
  const release = tracked(deps, caller, { destroy: () => (upstream.destroy(), res.destroy()) });
  const done = (allowed: boolean, reason?: string) => {
    if (finished) return;
    finished = true;
    release();
    deps.record(caller, t, { allowed, bytes, ...(reason ? { reason } : {}) });
  };
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  upstream.on('timeout', () => upstream.destroy(new Error('no byte for the idle timeout')));
  upstream.on('error', (error: NodeJS.ErrnoException) => {
    const reason = `could not reach ${t.host}:${t.port} (${error.code ?? error.message})`;
    refuseResponse(res, { status: 502, reason });
    done(true, reason);
  });
  upstream.on('response', (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.rawHeaders));
    answer.on('data', (chunk: Buffer) => (bytes += chunk.length));
    answer.pipe(res);
    answer.on('end', () => done(true));
    answer.on('error', () => res.destroy());
  });
  res.on('close', () => {
    upstream.destroy();
    done(true);
  });
  req.pipe(upstream);
}

/** A request with a body: a Content-Length above 0, or any Transfer-Encoding. */
const carriesBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** An absolute-form request (the server's `request` event, not origin-form). */
export async function handleForward(deps: ProxyDeps, req: IncomingMessage, res: ServerResponse) {
  const caller = authenticate(req.headers['proxy-authorization'], deps.credentials);
  if (!caller) {
    deps.unauthenticated();
    return refuseResponse(res, UNAUTHENTICATED);
  }
  if (req.headers['transfer-encoding'] !== undefined && req.headers['content-length'] !== undefined) {
    deps.record(caller, undefined, { allowed: false, bytes: 0 });
    return refuseResponse(res, { status: 400, reason: 'both Content-Length and Transfer-Encoding: refused' });
  }
  const parsed = parseAbsoluteUrl(req.method ?? 'GET', req.url ?? '');
  const target = 'problem' in parsed ? parsed : { ...parsed, body: carriesBody(req) };
  const busy = deps.slots.claim(req.socket, caller);
  if (busy) {
    deps.record(caller, 'problem' in target ? undefined : target, { allowed: false, bytes: 0, reason: busy });
    return refuseResponse(res, { status: 403, reason: busy });
  }
  const left = new AbortController();
  const onLeft = () => left.abort();
  res.once('close', onLeft);
  req.socket.once('end', onLeft);
  const admission = await admit(deps, caller, target, left.signal);
  res.off('close', onLeft);
  req.socket.off('end', onLeft);
  if ('status' in admission) {
    deps.record(caller, admission.target, { allowed: false, bytes: 0, reason: admission.reason });
    return refuseResponse(res, admission);
  }
  if (res.destroyed) return;
  forward(deps, caller, req, res, admission.address, admission.target);
}
