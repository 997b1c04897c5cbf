// Connection reuse on the real API server: a TCP pass-through in front of it counts the TLS
// connections that API calls open, with client-node's own KubeConfig and with the shared one.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedConnectionsKubeConfig, withSharedConnections } from '../../common/kube/shared-connections.ts';
import { GROUP, PLURAL, VERSION } from '../../common/session/schema.ts';
import { adminKubeConfig, installSessionCrd } from '../support/cluster.ts';

const CALLS = 10;
let proxy: Server;
let connections = 0;
const sockets = new Set<Socket>();
let admin: KubeConfig;
let viaProxy: KubeConfig;

beforeAll(async () => {
  admin = adminKubeConfig();
  await installSessionCrd(admin);
  const upstream = new URL(admin.getCurrentCluster()!.server);
  proxy = createServer((client) => {
    connections++;
    const server = connect(Number(upstream.port), upstream.hostname);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket)).on('error', () => undefined);
    }
    client.pipe(server).pipe(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as { port: number };
  viaProxy = new KubeConfig();
  viaProxy.loadFromOptions({
    clusters: admin.getClusters().map((c) => ({ ...c, server: `https://127.0.0.1:${port}` })),
    users: admin.getUsers(),
    contexts: admin.getContexts(),
    currentContext: admin.getCurrentContext(),
  });
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => proxy?.close(resolve));
});

/** Connections opened by CALLS sequential API calls, through two API clients of `kc`. */
async function connectionsFor(kc: KubeConfig): Promise<number> {
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const before = connections;
  for (let i = 0; i < CALLS; i++) {
    if (i % 2) await core.listNamespace({ limit: 1 });
    else await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, limit: 1 });
  }
  return connections - before;
}

describe('API clients and connections', () => {
  it('client-node alone opens a connection per call', async () => {
    expect(await connectionsFor(viaProxy)).toBe(CALLS);
  });

  it('a SharedConnectionsKubeConfig makes every client of one identity share one connection', async () => {
    const shared = new SharedConnectionsKubeConfig();
    shared.loadFromOptions({
      clusters: viaProxy.getClusters(),
      users: viaProxy.getUsers(),
      contexts: viaProxy.getContexts(),
      currentContext: viaProxy.getCurrentContext(),
    });
    expect(await connectionsFor(shared)).toBe(1);
  });

  it('withSharedConnections keeps the cluster, user and context of the KubeConfig it is given', async () => {
    const shared = withSharedConnections(viaProxy);
    expect(shared.getCurrentCluster()).toEqual(viaProxy.getCurrentCluster());
    expect(shared.getCurrentUser()).toEqual(viaProxy.getCurrentUser());
    expect(await connectionsFor(shared)).toBe(1);
  });
});
