// The forges' own addresses, so that the forge named otherwise (`localhost:3000`, a literal address of
// github.com) is still the forge (decide.ts, step 2). A forge host written as an address is one; a name
// is resolved, and its addresses kept for a short while (cacheMs) so a change of them is seen soon.
import { isIP } from 'node:net';
import { canonicalAddress } from './cidrs.ts';
import { literalForgeAddresses, type ForgeAddress } from './decide.ts';
import type { ForgeHost } from './target.ts';

export interface ForgeAddresses {
  /** Every forge's addresses now (a name not resolved lately is resolved first). */
  current(): Promise<ForgeAddress[]>;
}

export function forgeAddresses(
  forges: readonly ForgeHost[],
  resolve: (host: string) => Promise<string[]>,
  cacheMs: number,
  now: () => number = Date.now,
): ForgeAddresses {
  const literal = literalForgeAddresses(forges);
  const named = forges.filter((f) => !isIP(f.host));
  let kept: { at: number; addresses: Promise<ForgeAddress[]> } | undefined;
  const lookUp = async () =>
    (
      await Promise.all(
        named.map(async (f) => (await resolve(f.host)).map((a) => ({ address: canonicalAddress(a), port: f.port }))),
      )
    ).flat();
  return {
    async current() {
      if (named.length === 0) return literal;
      if (!kept || now() - kept.at >= cacheMs) kept = { at: now(), addresses: lookUp() };
      return [...literal, ...(await kept.addresses)];
    },
  };
}
