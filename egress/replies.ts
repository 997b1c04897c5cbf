// What a refused client reads: the status, the reason as text/plain and in a Proxy-Status header
// (RFC 9209), in words an agent can act on. On a response object, or written raw on a CONNECT socket.
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

export const PROXY_NAME = 'tether-egress';

export type Refusal = { status: 400 | 403 | 407 | 502; reason: string };

const STATUS_TEXT: Record<Refusal['status'], string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  407: 'Proxy Authentication Required',
  502: 'Bad Gateway',
};

const ERROR_TYPE: Record<Refusal['status'], string> = {
  400: 'http_request_error',
  403: 'http_request_denied',
  407: 'proxy_internal_response',
  502: 'destination_unavailable',
};

/** The reason as a structured-field string: printable ASCII, quotes and backslashes escaped. */
const sfString = (text: string) => `"${text.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, '\\$&')}"`;

/** The headers of a refusal (its body is the reason and a newline). */
export function refusalHeaders(refusal: Refusal): Record<string, string> {
  return {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(`${refusal.reason}\n`)),
    'Proxy-Status': `${PROXY_NAME}; error=${ERROR_TYPE[refusal.status]}; details=${sfString(refusal.reason)}`,
    ...(refusal.status === 407 ? { 'Proxy-Authenticate': `Basic realm="${PROXY_NAME}"` } : {}),
  };
}

export function refuseResponse(res: ServerResponse, refusal: Refusal): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(refusal.status, { ...refusalHeaders(refusal), Connection: 'close' }).end(`${refusal.reason}\n`);
}

/** On a CONNECT socket (no response object): the same reply, then the socket ends. */
export function refuseSocket(socket: Duplex, refusal: Refusal): void {
  if (socket.destroyed) return;
  const headers = Object.entries({ ...refusalHeaders(refusal), Connection: 'close' })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${refusal.status} ${STATUS_TEXT[refusal.status]}\r\n${headers}\r\n${refusal.reason}\n`);
}

export const UNAUTHENTICATED: Refusal = {
  status: 407,
  reason: 'the proxy needs the credential of a live Session (Proxy-Authorization: Basic)',
};
