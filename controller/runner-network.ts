// Runner Pods without DNS (docs/controller.md, "Egress"). With the egress proxy on, the agent shares
// its Pod's network, and cluster DNS recurses to any name server: a query for <data>.attacker.example
// would carry data around the proxy. So runner Pods resolve no names: the two hosts the supervisor
// dials itself (the relay's and the proxy's Services) are in /etc/hosts (hostAliases, their
// ClusterIPs as the controller reads them), the API server is an address, and everything else goes
// through the proxy, which resolves.
import { isIP } from 'node:net';
import type { V1HostAlias, V1PodDNSConfig, V1PodSpec, V1Service } from '@kubernetes/client-node';
import { ConfigError } from '../common/config/env.ts';

/**
 * The Pod's resolv.conf: a name server on the Pod's own loopback, where nothing serves DNS, so a
 * lookup of any name not in /etc/hosts fails at once (the refused datagram), and one try of 1 s at
 * most if anything drops it. The API server requires a name server with dnsPolicy None.
 */
export const NO_DNS_CONFIG: V1PodDNSConfig = {
  nameservers: ['127.0.0.1'],
  searches: [],
  options: [
    { name: 'attempts', value: '1' },
    { name: 'timeout', value: '1' },
  ],
};

/** A host name the runner dials, and the Service of the install namespace it names. */
export interface ServiceHost {
  variable: 'TETHER_RELAY_URL' | 'TETHER_EGRESS_URL';
  host: string;
  service: string;
}

const SERVICE_HOST = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.[a-z0-9.-]+)?$/;

/**
 * The Service names among the relay's and the proxy's URLs (`<service>.<namespace>.svc[.<domain>]`, of
 * the install namespace); an address or localhost needs none. Any other name is refused: a runner
 * Pod could not resolve it.
 */
export function serviceHosts(urls: Partial<Record<ServiceHost['variable'], string>>, namespace: string): ServiceHost[] {
  const hosts: ServiceHost[] = [];
  for (const [variable, url] of Object.entries(urls) as Array<[ServiceHost['variable'], string | undefined]>) {
    if (!url) continue;
    const host = new URL(url).hostname;
    if (isIP(host.replace(/^\[|\]$/g, '')) || host === 'localhost') continue;
    const match = SERVICE_HOST.exec(host);
    if (!match || match[3] !== namespace) {
      throw new ConfigError(
        variable,
        `must name an address or a Service of ${namespace} (<service>.${namespace}.svc): with the egress ` +
          `proxy on, runner Pods resolve no names (got host ${JSON.stringify(host)})`,
      );
    }
    hosts.push({ variable, host, service: match[1]! });
  }
  return hosts;
}

/** The hostAliases of runner Pods from the Services as read, or why they cannot be made yet. */
export function hostAliases(
  hosts: readonly ServiceHost[],
  namespace: string,
  service: (name: string) => V1Service | undefined,
): { aliases: V1HostAlias[] } | { problem: string } {
  const aliases: V1HostAlias[] = [];
  for (const { variable, host, service: name } of hosts) {
    const found = service(name);
    const ip = found?.spec?.clusterIP;
    if (!found || !ip || ip === 'None') {
      const why = found
        ? `has no cluster IP (${found.spec?.type ?? 'ClusterIP'}, clusterIP ${ip ?? 'unset'})`
        : 'is not found';
      return {
        problem:
          `waiting for Service ${namespace}/${name} (${variable}): it ${why}; runner Pods reach ${host} by ` +
          `its cluster IP, as they resolve no names with the egress proxy on`,
      };
    }
    aliases.push({ ip, hostnames: [host] });
  }
  return { aliases };
}

/** What a runner Pod's spec says of names: nothing (the cluster's DNS) without the egress proxy. */
export function runnerNameSpec(noDns: boolean, aliases: V1HostAlias[] = []): Partial<V1PodSpec> {
  if (!noDns) return {};
  // Copies: a Pod built here may be changed by its caller, and the constants are shared.
  const copies = aliases.map((a) => ({ ...a, hostnames: [...(a.hostnames ?? [])] }));
  return {
    dnsPolicy: 'None',
    dnsConfig: structuredClone(NO_DNS_CONFIG),
    ...(aliases.length ? { hostAliases: copies } : {}),
  };
}
