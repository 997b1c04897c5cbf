// The origin-form requests: the supervisor API of common/egress/protocol.ts (a Session's events stream
// and the answers to its asks, for the supervisor of the Pod the Session is bound to, authenticated
// with `Authorization: Basic`), /metrics and /healthz.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { EGRESS_PING_MS, GRANTS, type Grant } from '../common/egress/protocol.ts';
import type { Asks, EventStream } from './asks.ts';
import { authenticate, liveBinding, type CredentialContext } from './callers.ts';
import type { Slots } from './slots.ts';

export interface SupervisorApiDeps {
  credentials: CredentialContext;
  asks: Asks;
  slots: Slots;
  registry: Registry;
  pingMs?: number;
}

const MAX_ANSWER_BYTES = 1024;
/** Session names are DNS subdomains: nothing in them is percent-encoded. */
const ROUTE = /^\/v1\/sessions\/([a-z0-9][-a-z0-9.]{0,252})\/(events|answers)$/;

function reply(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers }).end(`${text}\n`);
}

function openStream(deps: SupervisorApiDeps, session: string, pod: string, req: IncomingMessage, res: ServerResponse) {
  res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'Cache-Control': 'no-store' });
  res.flushHeaders();
  req.socket.setTimeout(0);
  const stream: EventStream = {
    send: (event) => res.write(`${JSON.stringify(event)}\n`),
    close: () => res.end(),
  };
  const ping = setInterval(() => stream.send({ type: 'ping' }), deps.pingMs ?? EGRESS_PING_MS);
  res.on('close', () => {
    clearInterval(ping);
    deps.asks.detachStream(session, stream);
  });
  deps.asks.attachStream(session, stream, pod);
}

/** The answer's body: at most 1 KiB of JSON {id, grant}. */
async function readAnswer(req: IncomingMessage): Promise<{ id: string; grant: Grant } | undefined> {
  let text = '';
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > MAX_ANSWER_BYTES) return undefined;
  }
  try {
    const body = JSON.parse(text) as { id?: unknown; grant?: unknown };
    if (typeof body.id !== 'string' || !GRANTS.includes(body.grant as Grant)) return undefined;
    return { id: body.id, grant: body.grant as Grant };
  } catch {
    return undefined;
  }
}

async function supervisorRoute(deps: SupervisorApiDeps, req: IncomingMessage, res: ServerResponse, route: string[]) {
  const caller = authenticate(req.headers.authorization, deps.credentials);
  if (caller?.kind !== 'supervisor')
    return reply(res, 401, 'the supervisor credential of a runner Pod is needed', {
      'WWW-Authenticate': 'Basic realm="tether-egress"',
    });
  const busy = deps.slots.claim(req.socket, caller);
  if (busy) return reply(res, 403, busy, { Connection: 'close' });
  const session = route[1]!;
  if (liveBinding(deps.credentials.sessions.get(session)) !== caller.pod)
    return reply(res, 403, `Session ${session.slice(0, 80)} is not running on this runner Pod`);
  if (route[2] === 'events') {
    if (req.method !== 'GET') return reply(res, 405, 'GET the events', { Allow: 'GET' });
    return openStream(deps, session, caller.pod, req, res);
  }
  if (req.method !== 'POST') return reply(res, 405, 'POST an answer', { Allow: 'POST' });
  const answer = await readAnswer(req);
  if (!answer)
    return reply(res, 400, `an answer is JSON {"id": "…", "grant": ${GRANTS.map((g) => `"${g}"`).join('|')}}`);
  if (!deps.asks.answer(session, answer.id, answer.grant)) return reply(res, 404, 'no such open ask');
  res.writeHead(204).end();
}

/** A request in origin form (a path, not a URL). */
export async function handleOrigin(deps: SupervisorApiDeps, req: IncomingMessage, res: ServerResponse) {
  const path = (req.url ?? '/').split('?')[0]!;
  if (path === '/healthz') return reply(res, 200, 'ok');
  if (path === '/metrics' && req.method === 'GET') {
    res.writeHead(200, { 'Content-Type': deps.registry.contentType }).end(await deps.registry.metrics());
    return;
  }
  const route = ROUTE.exec(path);
  if (route) return supervisorRoute(deps, req, res, [...route]);
  reply(res, 404, 'not found: this is the egress proxy (CONNECT, absolute-form http://, /v1/sessions/…)');
}
