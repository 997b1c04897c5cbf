// How a process reaches the API server: one connection (address, TLS, credentials) over keep-alive
// agents, shared by its informers and resource handles so requests reuse TLS connections. Every
// deployable talks to the API server through it (raw.ts); none loads client-node's API classes.
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

/**
 * The connection of a client-node KubeConfig (one per KubeConfig object, so its pool is shared): for
 * kubeconfig files only client-node can read (several merged, exec plugins) and for the local stack.
 */
export function connectionFromKubeConfig(kc: KubeConfig): KubeConnection {
  let connection = byKubeConfig.get(kc);
  if (!connection) {
    connection = kubeConfigConnection(kc);
    byKubeConfig.set(kc, connection);
  }
  return connection;
}

/** client-node's KubeConfig from this file or the default places (loaded only when needed: it costs a second). */
export async function loadKubeConfig(file?: string): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return kc;
}
