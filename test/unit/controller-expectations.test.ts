import { describe, expect, it } from 'vitest';
import { createExpectations, EXPECTATION_TIMEOUT_MS } from '../../controller/expectations.ts';

type Obj = { metadata: { resourceVersion: string; deletionTimestamp?: string } };
const at = (resourceVersion: string, deleting = false): Obj => ({
  metadata: { resourceVersion, ...(deleting ? { deletionTimestamp: '2026-11-22T08:00:00Z' } : {}) },
});

function setup() {
  const cache = { sessions: new Map<string, Obj>(), pods: new Map<string, Obj>() };
  const woken: string[] = [];
  let clock = 0;
  const expectations = createExpectations({
    cached: { sessions: (k) => cache.sessions.get(k), pods: (k) => cache.pods.get(k) },
    wake: (key) => woken.push(key),
    now: () => clock,
  });
  return { cache, woken, expectations, tick: (ms: number) => (clock += ms) };
}

describe("cache freshness after the controller's own writes", () => {
  it('holds a pass while the cache shows the version a status write replaced, wakes it once it shows another', () => {
    const { cache, woken, expectations } = setup();
    cache.sessions.set('ns/a', at('10'));
    expectations.wrote('sessions', 'ns/a', at('11'), '10', true);
    expect(expectations.fresh([['sessions', 'ns/a']], 'ns/a')).toBe(false);
    // The replaced version arriving late (the pass had read the API ahead of the cache) changes nothing.
    expect(expectations.observed('sessions', 'ns/a', at('10'))).toBe(true);
    expect(woken).toEqual([]);
    // Its own settled write's event asks for no pass of its own; the waiting pass is woken.
    cache.sessions.set('ns/a', at('11'));
    expect(expectations.observed('sessions', 'ns/a', at('11'))).toBe(false);
    expect(woken).toEqual(['ns/a']);
    expect(expectations.fresh([['sessions', 'ns/a']], 'ns/a')).toBe(true);
  });

  it('asks for a pass on the echo of a write its pass did not act on, and on any other version', () => {
    const { expectations } = setup();
    expectations.wrote('sessions', 'ns/a', at('11'), '10', false);
    expect(expectations.observed('sessions', 'ns/a', at('11'))).toBe(true);
    expectations.wrote('sessions', 'ns/a', at('13'), '12', true);
    expect(expectations.observed('sessions', 'ns/a', at('14'))).toBe(true);
  });

  it('holds the passes reading a created Pod until the cache has it; settle() makes its echo silent', () => {
    const { cache, woken, expectations } = setup();
    expectations.wrote('pods', 'r/p', at('5'), undefined, false);
    expect(expectations.fresh([['pods', 'r/p']], 'ns/a')).toBe(false);
    expectations.settle('pods', 'r/p');
    cache.pods.set('r/p', at('5'));
    expect(expectations.observed('pods', 'r/p', at('5'))).toBe(false);
    expect(woken).toEqual(['ns/a']);
  });

  it('holds the passes reading a deleted Pod until the cache shows it going or gone', () => {
    const { cache, expectations } = setup();
    cache.pods.set('r/p', at('5'));
    expectations.deleted('pods', 'r/p');
    expect(expectations.fresh([['pods', 'r/p']], 'ns/a')).toBe(false);
    cache.pods.set('r/p', at('6', true));
    expect(expectations.fresh([['pods', 'r/p']], 'ns/a')).toBe(true);
  });

  it('lets a write that was never observed lapse after the timeout', () => {
    const { expectations, tick } = setup();
    expectations.wrote('pods', 'r/p', at('5'), undefined, true);
    expect(expectations.fresh([['pods', 'r/p']], 'ns/a')).toBe(false);
    tick(EXPECTATION_TIMEOUT_MS);
    expect(expectations.fresh([['pods', 'r/p']], 'ns/a')).toBe(true);
  });
});
