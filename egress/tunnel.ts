// CONNECT host:port: the caller authenticated, the destination admitted, then a TCP tunnel to the very
// address that was checked, closed after idleMs without a byte either way.
import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { admit, type AdmitDeps } from './admit.ts';
import type { Asks } from './asks.ts';
import { authenticate, podStillRuns, type Caller, type CredentialContext } from './callers.ts';
import type { RecordConnection } from './record.ts';
import type { Closable, PodConnections } from './pod-connections.ts';
import type { Slots } from './slots.ts';
import { refuseSocket, UNAUTHENTICATED } from './replies.ts';
import { parseConnectTarget, type Target } from './target.ts';

export interface ProxyDeps extends AdmitDeps {
  credentials: CredentialContext;
  asks: Asks;
  podConnections: PodConnections;
  record: RecordConnection;
  slots: Slots;
  idleMs: number;
  /** Counts a request refused before anyone was known (407). */
  unauthenticated(): void;
}

/**
 * Ties the connection's life to its caller's Pod (cut when the Pod ends) and an agent's to its Session (cut when
 * it ends or moves); the release when it closes.
 */
export function tracked(deps: ProxyDeps, caller: Caller, connection: Closable): () => void {
  // The Pod may have ended while the connection was being admitted (a lookup, the phone's answer).
  if (!podStillRuns(deps.credentials.pods, caller)) {
    connection.destroy();
    return () => undefined;
  }
  const releasePod = deps.podConnections.track(caller.pod, connection);
  if (caller.kind === 'supervisor') return releasePod;
  const releaseSession = deps.asks.track(caller.session, connection);
  return () => (releasePod(), releaseSession());
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

/** Bytes a client may send before its tunnel is open (a TLS hello sent early); more closes it. */
const MAX_EARLY_BYTES = 64 * 1024;

/**
 * Reads the client while its CONNECT is decided, so that a hang-up is seen at once (`left` aborts: a
 * waiting slot is freed) and bytes sent early are kept for the tunnel; `stop` pauses it and returns them.
 */
function readWhileWaiting(client: Duplex): { left: AbortSignal; stop(): Buffer } {
  const leaving = new AbortController();
  const chunks: Buffer[] = [];
  let bytes = 0;
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    bytes += chunk.length;
    if (bytes > MAX_EARLY_BYTES) client.destroy();
  };
  const onLeft = () => leaving.abort();
  client.on('data', onData);
  client.once('end', onLeft);
  client.once('close', onLeft);
  return {
    left: leaving.signal,
    stop() {
      client.off('data', onData);
      client.off('end', onLeft);
      client.off('close', onLeft);
      client.pause();
      return Buffer.concat(chunks);
    },
  };
}

/** The server's `connect` event. */
export async function handleConnect(deps: ProxyDeps, req: IncomingMessage, client: Duplex, head: Buffer) {
  client.on('error', () => client.destroy());
  const caller = authenticate(req.headers['proxy-authorization'], deps.credentials);
  if (!caller) {
    deps.unauthenticated();
    return refuseSocket(client, UNAUTHENTICATED);
  }
  const target = parseConnectTarget(req.url ?? '');
  const busy = deps.slots.claim(client as Socket, caller);
  if (busy) {
    deps.record(caller, 'problem' in target ? undefined : target, { allowed: false, bytes: 0, reason: busy });
    return refuseSocket(client, { status: 403, reason: busy });
  }
  const release = tracked(deps, caller, client);
  const early = readWhileWaiting(client);
  const admission = await admit(deps, caller, target, early.left);
  release();
  const sent = early.stop();
  if ('status' in admission) {
    deps.record(caller, admission.target, { allowed: false, bytes: 0, reason: admission.reason });
    return refuseSocket(client, admission);
  }
  if (client.destroyed || early.left.aborted) return client.destroy();
  tunnel(deps, caller, client, Buffer.concat([head, sent]), admission);
}
