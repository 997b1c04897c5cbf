// CONNECT host:port: the caller authenticated, the destination admitted, then a TCP tunnel to the very
// address that was checked, closed after idleMs without a byte either way.
import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { admit, type AdmitDeps } from './admit.ts';
import type { Asks } from './asks.ts';
import { authenticate, type Caller, type CredentialContext } from './callers.ts';
import type { RecordConnection } from './record.ts';
import { refuseSocket, UNAUTHENTICATED } from './replies.ts';
import { parseConnectTarget, type Target } from './target.ts';

export interface ProxyDeps extends AdmitDeps {
  credentials: CredentialContext;
  asks: Asks;
  record: RecordConnection;
  idleMs: number;
  /** Counts a request refused before anyone was known (407). */
  unauthenticated(): void;
}

/** Ties the tunnel's life to its agent's Session (cut when it ends); the release when it closes. */
export function tracked(deps: ProxyDeps, caller: Caller, connection: { destroy(): void }): () => void {
  return caller.kind === 'agent' ? deps.asks.track(caller.session, connection) : () => undefined;
}

function tunnel(
  deps: ProxyDeps,
  caller: Caller,
  client: Duplex,
  head: Buffer,
  to: { address: string; target: Target },
) {
  const upstream: Socket = connect({ host: to.address, port: to.target.port });
  let opened = false;
  const release = tracked(deps, caller, { destroy: () => (client.destroy(), upstream.destroy()) });
  const idle = () => (client.destroy(), upstream.destroy());
  upstream.setTimeout(deps.idleMs, idle);
  (client as Socket).setTimeout?.(deps.idleMs, idle);
  upstream.once('connect', () => {
    opened = true;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  upstream.once('error', (error: NodeJS.ErrnoException) => {
    if (opened) return client.destroy();
    const reason = `could not connect to ${to.target.host}:${to.target.port} (${error.code ?? error.message})`;
    refuseSocket(client, { status: 502, reason });
  });
  client.on('error', () => upstream.destroy());
  upstream.once('close', () => {
    client.destroy();
    release();
    deps.record(caller, to.target, {
      allowed: true,
      bytes: upstream.bytesRead + upstream.bytesWritten,
      ...(opened ? {} : { reason: 'the destination did not accept the connection' }),
    });
  });
}

/** The server's `connect` event. */
export async function handleConnect(deps: ProxyDeps, req: IncomingMessage, client: Duplex, head: Buffer) {
  client.on('error', () => client.destroy());
  const caller = authenticate(req.headers['proxy-authorization'], deps.credentials);
  if (!caller) {
    deps.unauthenticated();
    return refuseSocket(client, UNAUTHENTICATED);
  }
  const release = tracked(deps, caller, client);
  const admission = await admit(deps, caller, parseConnectTarget(req.url ?? ''));
  release();
  if ('status' in admission) {
    deps.record(caller, admission.target, { allowed: false, bytes: 0, reason: admission.reason });
    return refuseSocket(client, admission);
  }
  if (client.destroyed) return;
  tunnel(deps, caller, client, head, admission);
}
