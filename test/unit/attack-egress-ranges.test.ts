// Attack: an internal address written as an IPv6 one the default ranges do not name. In an IPv6
// cluster with DNS64/NAT64 (the well-known prefix 64:ff9b::/96, RFC 6052; local-use 64:ff9b:1::/48,
// RFC 8215) an address there reaches the IPv4 address inside it: the metadata address, the nodes.
import { describe, expect, it } from 'vitest';
import { DEFAULT_BLOCKED_CIDRS, parseCidrs } from '../../egress/cidrs.ts';

const blocked = parseCidrs(DEFAULT_BLOCKED_CIDRS.join(','));

describe('the default blocked ranges', () => {
  it.each([
    ['64:ff9b::a9fe:a9fe', '169.254.169.254 through NAT64'],
    ['64:ff9b::a00:1', '10.0.0.1 through NAT64'],
    ['64:ff9b:1::a00:1', '10.0.0.1 through local-use NAT64'],
  ])('hold %s (%s)', (address) => {
    expect(blocked.has(address)).toBe(true);
  });
});
