// The egress proxy's one port (node:http): CONNECT and absolute-form requests are proxied,
// origin-form ones are the supervisor API, /metrics and /healthz. Bounded against hostile clients:
// header size and time, open connections, waiting connections per Session, idle tunnels.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../common/log.ts';
import type { Asks } from './asks.ts';
import { liveBinding, type SessionsView, type WatchedPods } from './callers.ts';
import { PodConnections } from './pod-connections.ts';
import type { EgressConfig } from './config.ts';
import { systemResolve } from './admit.ts';
import { handleForward } from './forward.ts';
import type { RepositoryGrants } from './grants.ts';
import type { EgressMetrics } from './metrics.ts';
import { forgeAddresses } from './forges.ts';
import { recorder } from './record.ts';
import { refuseSocket } from './replies.ts';
import { Slots } from './slots.ts';
import { handleOrigin } from './supervisor-api.ts';
import { handleConnect, type ProxyDeps } from './tunnel.ts';

export interface AppDeps {
  config: Pick<EgressConfig, 'key' | 'runnerNamespace' | 'rules' | 'limits'>;
  sessions: SessionsView;
  pods: WatchedPods;
  grants: RepositoryGrants;
  asks: Asks;
  metrics: EgressMetrics;
  logger: Logger;
  /** Every address of a host name (tests give a fixed table; the default is the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
  pingMs?: number;
}

/** A Session that ended, or moved to another Pod, loses its stream, its waiting connections and its tunnels. */
function endSessionsThatStop(deps: AppDeps): void {
  deps.sessions.onChange((name, view) => {
    const pod = liveBinding(view);
    const streamPod = deps.asks.podOf(name);
    if (!pod || (streamPod !== undefined && streamPod !== pod)) deps.asks.endSession(name);
  });
}

/** A runner Pod that ended (deleted, finished, or another of its name) loses its callers' open connections. */
function endPodsThatStop(deps: AppDeps, podConnections: PodConnections): void {
  const uids = new Map<string, string>();
  deps.pods.onChange((name, view) => {
    const before = uids.get(name);
    if (view && !view.done) uids.set(name, view.uid);
    else uids.delete(name);
    if (!view || view.done || (before !== undefined && before !== view.uid)) podConnections.endPod(name);
  });
}

function proxyDeps(deps: AppDeps, slots: Slots): ProxyDeps {
  const { key, runnerNamespace } = deps.config;
  const credentials = { key, runnerNamespace, sessions: deps.sessions, pods: deps.pods };
  const { rules, limits } = deps.config;
  return {
    rules,
    asks: deps.asks,
    sessions: deps.sessions,
    grants: deps.grants,
    forges: forgeAddresses(rules.forgeHosts, deps.resolve ?? systemResolve, limits.forgeCacheMs),
    ...(deps.resolve ? { resolve: deps.resolve } : {}),
    credentials,
    slots,
    podConnections: new PodConnections(),
    record: recorder(deps.metrics, deps.asks, deps.sessions, deps.logger),
    idleMs: limits.idleMs,
    unauthenticated: () => {
      deps.metrics.connections.inc({ caller: 'unknown', decision: 'unauthenticated' });
      deps.logger.info({ caller: 'unknown', allowed: false, reason: 'no credential' }, 'connection');
    },
  };
}

function countConnections(server: Server, deps: AppDeps, slots: Slots): void {
  server.on('connection', (socket: Socket) => {
    slots.accept(socket);
    deps.metrics.open.inc();
    socket.once('close', () => deps.metrics.open.dec());
  });
  deps.metrics.readWaitingFrom(() => deps.asks.waitingCount());
}

/** The server, not yet listening. */
export function createApp(deps: AppDeps): Server {
  const { limits } = deps.config;
  const server = createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headerMs,
    requestTimeout: limits.askWaitMs + limits.idleMs,
    connectionsCheckingInterval: Math.min(1000, limits.headerMs),
  });
  server.maxConnections = limits.maxConnections;
  const slots = new Slots(limits);
  const proxy = proxyDeps(deps, slots);
  const api = {
    credentials: proxy.credentials,
    asks: deps.asks,
    slots,
    registry: deps.metrics.registry,
    pingMs: deps.pingMs,
  };
  const failed = (error: unknown) => deps.logger.error({ err: error }, 'a proxied connection failed');
  endSessionsThatStop(deps);
  endPodsThatStop(deps, proxy.podConnections);
  countConnections(server, deps, slots);
  server.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    handleConnect(proxy, req, socket, head).catch((error: unknown) => {
      failed(error);
      socket.destroy();
    });
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const work = (req.url ?? '').startsWith('/') ? handleOrigin(api, req, res) : handleForward(proxy, req, res);
    work.catch((error: unknown) => {
      failed(error);
      res.destroy();
    });
  });
  server.on('upgrade', (_req: IncomingMessage, socket: Socket) =>
    refuseSocket(socket, { status: 400, reason: 'protocol upgrades are not proxied; use CONNECT' }),
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    deps.metrics.connections.inc({ caller: 'unknown', decision: 'malformed' });
    const reason =
      error.code === 'HPE_HEADER_OVERFLOW' ? 'the request head is too large' : 'the request cannot be read';
    refuseSocket(socket, { status: 400, reason });
  });
  return server;
}
