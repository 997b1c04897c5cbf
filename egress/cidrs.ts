// Address ranges no destination may resolve into unless the install listed it (TETHER_EGRESS_BLOCKED_CIDRS):
// the cluster's own networks, loopback, link-local (the cloud metadata address), and the NAT64 prefixes
// through which an IPv6-only cluster reaches any IPv4 address inside them (RFC 6052, RFC 8215). Pure.
import { BlockList, isIP } from 'node:net';

export const DEFAULT_BLOCKED_CIDRS = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '0.0.0.0/8',
  '::1/128',
  '::/128',
  'fc00::/7',
  'fe80::/10',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
] as const;

export interface BlockedRanges {
  /** The ranges as given (for the docs and logs). */
  readonly text: readonly string[];
  /** Whether the address (IPv4, IPv6, IPv4-mapped IPv6) lies in one of them. */
  has(address: string): boolean;
}

/** `a.b.c.d/n`, `v6/n` or one address, comma-separated; `none` is the empty list. Throws naming a bad one. */
export function parseCidrs(text: string): BlockedRanges {
  const items =
    text.trim() === 'none'
      ? []
      : text
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
  const list = new BlockList();
  for (const item of items) {
    const [address = '', bits, extra] = item.split('/');
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefix = bits === undefined ? max : /^[0-9]{1,3}$/.test(bits) ? Number(bits) : NaN;
    if (family === 0 || extra !== undefined || !(prefix >= 0 && prefix <= max))
      throw new Error(`"${item.slice(0, 60)}" is not an address range (10.0.0.0/8, fc00::/7) or \`none\``);
    list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return { text: items, has: (address) => inList(list, address) };
}

const MAPPED = /^(?:0{0,4}:){0,5}:?ffff:([0-9]+\.[0-9]+\.[0-9]+\.[0-9]+)$/i;
const MAPPED_HEX = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i;

/** The IPv4 address inside an IPv4-mapped IPv6 one (::ffff:127.0.0.1 or ::ffff:7f00:1), if it is one. */
function mappedV4(address: string): string | undefined {
  const dotted = MAPPED.exec(address)?.[1];
  if (dotted) return dotted;
  const hex = MAPPED_HEX.exec(address);
  if (!hex) return undefined;
  const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

function inList(list: BlockList, address: string): boolean {
  const mapped = mappedV4(address);
  if (mapped) return list.check(mapped, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** One spelling per address: an IPv4-mapped IPv6 address as its IPv4, IPv6 compressed and lower-case. */
export function canonicalAddress(address: string): string {
  const mapped = mappedV4(address);
  if (mapped) return mapped;
  return isIP(address) === 6 ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address;
}
