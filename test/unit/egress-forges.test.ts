// The forges' own addresses (egress/forges.ts): an address written as the forge host is one, a name is
// resolved and kept for cacheMs, then resolved again (a change of the forge's addresses is seen).
import { describe, expect, it } from 'vitest';
import { forgeAddresses } from '../../egress/forges.ts';

describe("the forges' addresses", () => {
  it('keeps a name resolved for cacheMs, then resolves it again; an address needs no lookup', async () => {
    const asked: string[] = [];
    let answer = ['140.82.112.3'];
    let now = 0;
    const forges = forgeAddresses(
      [{ host: 'github.com' }, { host: '::ffff:127.0.0.1', port: 3000 }],
      async (host) => (asked.push(host), answer),
      30_000,
      () => now,
    );
    expect(await forges.current()).toEqual([
      { address: '127.0.0.1', port: 3000 },
      { address: '140.82.112.3', port: undefined },
    ]);
    answer = ['140.82.113.3'];
    now = 29_999;
    expect((await forges.current()).map((f) => f.address)).toEqual(['127.0.0.1', '140.82.112.3']);
    now = 30_000;
    expect((await forges.current()).map((f) => f.address)).toEqual(['127.0.0.1', '140.82.113.3']);
    expect(asked).toEqual(['github.com', 'github.com']);
  });
});
