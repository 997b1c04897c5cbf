// The host's loopback ports a runner Pod's network gets when all its containers share it: what the
// runner NetworkPolicy lets a runner reach in a cluster — the API server, the relay and the egress
// proxy — read from the address the node gives runners and the Pod's TETHER_RELAY_URL and
// TETHER_EGRESS_URL. Only loopback can be carried: any other host is refused, saying so.
import type { LocalProcessSpec } from './pod-process.ts';

/** Set in a container's env when the Pod goes out through the egress proxy. */
export const EGRESS_URL_ENV = 'TETHER_EGRESS_URL';
const RELAY_URL_ENV = 'TETHER_RELAY_URL';

/** A port of the host's loopback, carried to the same address and port in the Pod's network. */
export interface CarriedPort {
  host: '127.0.0.1' | '::1';
  port: number;
}

const LOOPBACK: Record<string, CarriedPort['host']> = {
  '127.0.0.1': '127.0.0.1',
  localhost: '127.0.0.1',
  '[::1]': '::1',
};

function loopbackPort(what: string, url: string): CarriedPort {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`${what} (${JSON.stringify(url)}) is not a URL`);
  }
  const host = LOOPBACK[parsed.hostname];
  if (!host)
    throw new Error(
      `${what} names the host ${JSON.stringify(parsed.hostname)}, not loopback: the local node carries only ` +
        "ports of the host's loopback into a Pod's network",
    );
  return { host, port: Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80)) };
}

/** Whether the Pod goes out through the egress proxy (a container has its URL). */
export const usesEgressProxy = (specs: LocalProcessSpec[]) => specs.some((spec) => spec.env[EGRESS_URL_ENV]);

/** The API server's port (`server`: the address the node gives runners), the relay's and the proxy's, once each. */
export function carriedPorts(specs: LocalProcessSpec[], server: string): CarriedPort[] {
  const ports = new Map<number, CarriedPort>();
  const add = (carried: CarriedPort) => ports.set(carried.port, ports.get(carried.port) ?? carried);
  add(loopbackPort("the node's API server address", server));
  for (const spec of specs)
    for (const name of [RELAY_URL_ENV, EGRESS_URL_ENV]) {
      const url = spec.env[name];
      if (url) add(loopbackPort(`container ${spec.container}'s ${name}`, url));
    }
  return [...ports.values()];
}
