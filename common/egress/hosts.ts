// Allowlist entries, one definition for the chart's schema, the egress proxy and the phone's grants:
//   pypi.org           that host, ports 80 and 443
//   *.pythonhosted.org any host below it (not the name itself), ports 80 and 443
//   127.0.0.1:4873     that host on that port only
// Names are lower-case; an IPv6 address is written in brackets ([::1]:8080). Pure.
import { EGRESS_HOST_PATTERN } from '../session/patterns.ts';

/** The RE2-safe pattern of an entry (the chart's schema checks values with it). */
export const HOST_ENTRY_PATTERN =
  '^(\\*\\.)?([a-z0-9_]([-a-z0-9_]*[a-z0-9_])?(\\.[a-z0-9_]([-a-z0-9_]*[a-z0-9_])?)*|\\[[0-9a-f:.]+\\])(:[0-9]{1,5})?$';
const ENTRY = new RegExp(HOST_ENTRY_PATTERN);
const HOST = new RegExp(EGRESS_HOST_PATTERN);

/** Ports an entry without one covers. */
export const DEFAULT_PORTS: readonly number[] = [80, 443];

export interface HostEntry {
  /** The host, or the domain below which any host matches (wildcard). */
  host: string;
  wildcard: boolean;
  /** Undefined: DEFAULT_PORTS. */
  port?: number;
}

/** Parses one entry; throws an Error naming it when it is not one. */
export function parseHostEntry(text: string): HostEntry {
  const entry = text.trim().toLowerCase();
  if (!ENTRY.test(entry)) throw new Error(`"${text}" is not a host entry (host, *.domain, host:port or [ipv6]:port)`);
  const wildcard = entry.startsWith('*.');
  const rest = wildcard ? entry.slice(2) : entry;
  const portAt = rest.startsWith('[') ? rest.indexOf(']:') + 1 : rest.lastIndexOf(':');
  const hostPart = portAt > 0 ? rest.slice(0, portAt) : rest;
  const host = hostPart.replace(/^\[(.*)\]$/, '$1');
  const port = portAt > 0 ? Number(rest.slice(portAt + 1)) : undefined;
  if (port !== undefined && (port < 1 || port > 65535)) throw new Error(`"${text}" names port ${port}, not 1–65535`);
  return port === undefined ? { host, wildcard } : { host, wildcard, port };
}

/** A destination's canonical host: lower-case, IPv6 without brackets; undefined when it is no host. */
export function canonicalHost(host: string): string | undefined {
  const bare = host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  return bare.length > 0 && bare.length <= 253 && HOST.test(bare) ? bare : undefined;
}

/** Whether the entry covers the destination (host canonical, as canonicalHost gives it). */
export function entryMatches(entry: HostEntry, host: string, port: number): boolean {
  const portOk = entry.port === undefined ? DEFAULT_PORTS.includes(port) : entry.port === port;
  if (!portOk) return false;
  return entry.wildcard ? host.endsWith(`.${entry.host}`) : host === entry.host;
}

/** The entry a grant from the phone stores: exactly the destination asked about. */
export const grantEntry = (host: string, port: number): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;
