// How a process reaches the API server: one connection (address, TLS, credentials) over keep-alive
// agents, shared by its informers and Session clients so requests reuse TLS connections.
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** Where a Pod's service account token, CA and namespace are mounted. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface KubeConnection {
  /** Base URL of the API server, without a trailing slash. */
  readonly server: string;
  /** TLS settings, credentials and the shared agent for one request. */
  requestOptions(): Promise<RequestOptions>;
}

/** A client-node KubeConfig (controller, relay) or a connection loaded without client-node (runner). */
export type KubeAccess = KubeConfig | KubeConnection;

export interface TlsSettings {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

/** Sockets stay open between requests; the agent keys its pool by the TLS identity of each request. */
const keepAliveAgent = (server: string) =>
  server.startsWith('http:')
    ? new HttpAgent({ keepAlive: true, scheduling: 'lifo' })
    : new HttpsAgent({ keepAlive: true, scheduling: 'lifo' });

/** A connection with fixed TLS settings and an optional bearer token (read per request: tokens rotate). */
export function makeConnection(server: string, tls: TlsSettings, token?: () => Promise<string>): KubeConnection {
  const agent = keepAliveAgent(server);
  return {
    server: server.replace(/\/$/, ''),
    async requestOptions() {
      const bearer = await token?.();
      return { ...tls, agent, headers: bearer ? { Authorization: `Bearer ${bearer}` } : {} };
    },
  };
}

function kubeConfigConnection(kc: KubeConfig): KubeConnection {
  const agents = new Map<string, HttpAgent>();
  const server = () => {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    return cluster.server.replace(/\/$/, '');
  };
  return {
    get server() {
      return server();
    },
    async requestOptions() {
      const options: RequestOptions = {};
      await kc.applyToHTTPSOptions(options);
      const url = server();
      // A proxy needs client-node's own agent; otherwise one keep-alive pool per server.
      if (!kc.getCurrentCluster()?.proxyUrl) {
        if (!agents.has(url)) agents.set(url, keepAliveAgent(url));
        options.agent = agents.get(url);
      }
      return options;
    },
  };
}

const byKubeConfig = new WeakMap<KubeConfig, KubeConnection>();

/** The connection of a KubeConfig (one per KubeConfig object, so its pool is shared) or the connection itself. */
export function connectionOf(access: KubeAccess): KubeConnection {
  if (!('applyToHTTPSOptions' in access)) return access;
  let connection = byKubeConfig.get(access);
  if (!connection) {
    connection = kubeConfigConnection(access);
    byKubeConfig.set(access, connection);
  }
  return connection;
}

/**
 * client-node's KubeConfig from this file or the default places, for components that use its API
 * classes too; its API clients share connections (shared-connections.ts).
 */
export async function loadKubeConfig(file?: string): Promise<KubeConfig> {
  const { SharedConnectionsKubeConfig } = await import('./shared-connections.ts');
  const kc = new SharedConnectionsKubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return kc;
}
