// Connection reuse for the API clients of every component. client-node 2.x gives each request a
// new undici dispatcher, so a new TLS connection: ~10 ms and ~4 ms of CPU per API call on a local
// API server. A SharedConnectionsKubeConfig gives every request of one identity the same keep-alive
// dispatcher instead, through the authentication hook every generated API client calls.
// (The list/watch path in raw.ts authenticates with applyToHTTPSOptions and is not affected.)
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/** Renew the shared connection pool this often, so rotated client certificates are picked up. */
const RENEW_MS = 5 * 60_000;

export class SharedConnectionsKubeConfig extends KubeConfig {
  private readonly pools = new Map<string, { dispatcher: Dispatcher; until: number }>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (!fresh) return; // plain HTTP without TLS settings: fetch's global dispatcher already keeps connections
    const identity = `${this.getCurrentContext()}|${this.getCurrentCluster()?.server}|${this.getCurrentUser()?.name}`;
    const pool = this.pools.get(identity);
    if (pool && pool.until > Date.now()) context.setDispatcher(pool.dispatcher);
    else this.pools.set(identity, { dispatcher: fresh, until: Date.now() + RENEW_MS });
  }
}

/** The clusters, users and contexts of `source` in a KubeConfig whose clients share connections. */
export function withSharedConnections(source: KubeConfig): KubeConfig {
  const kc = new SharedConnectionsKubeConfig();
  kc.loadFromOptions({
    clusters: source.getClusters(),
    users: source.getUsers(),
    contexts: source.getContexts(),
    currentContext: source.getCurrentContext(),
  });
  return kc;
}
