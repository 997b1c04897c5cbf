import { describe, expect, it } from 'vitest';
import type { Session } from '../../common/session/schema.ts';
import { createOwnWrites } from '../../controller/own-writes.ts';

const KEY = 'ns/s1';
const at = (resourceVersion: string, phase?: 'Starting' | 'Working'): Session => ({
  apiVersion: 'tether.dev/v1alpha1',
  kind: 'Session',
  metadata: {
    namespace: 'ns',
    name: 's1',
    resourceVersion,
    managedFields: [{ manager: 'tether-controller' }],
  } as Session['metadata'],
  spec: { phone: '+14155550100', prompt: 'hi', repo: { url: 'https://github.com/acme/web.git' }, workspace: 'ws' },
  ...(phase ? { status: { phase, progress: [{ seq: 1, at: '2026-01-01T00:00:00Z', text: 'long' }] } } : {}),
});

describe("the controller's own status writes", () => {
  it('stand for the Session while the cache still holds the version the write replaced', () => {
    const own = createOwnWrites();
    own.record(at('11', 'Starting'), '10', true);
    const seen = own.view(KEY, at('10'));
    expect(seen?.metadata.resourceVersion).toBe('11');
    expect(seen?.status?.phase).toBe('Starting');
    // Trimmed as the cache trims.
    expect(seen?.status?.progress).toBeUndefined();
    expect((seen?.metadata as { managedFields?: unknown }).managedFields).toBeUndefined();
  });

  it('give way to any other version in the cache, newer or not', () => {
    const own = createOwnWrites();
    own.record(at('11', 'Starting'), '10', true);
    expect(own.view(KEY, at('12', 'Working'))?.metadata.resourceVersion).toBe('12');
    expect(own.view(KEY, at('9'))?.metadata.resourceVersion).toBe('9');
    expect(own.view(KEY, undefined)).toBeUndefined();
    expect(own.view('ns/other', at('10'))?.metadata.resourceVersion).toBe('10');
  });

  it(`end when the cache shows the write; the write's own event asks \
for a pass only if its pass did not act on it`, () => {
    const acted = createOwnWrites();
    acted.record(at('11', 'Starting'), '10', true);
    expect(acted.observed(KEY, at('11', 'Starting'))).toBe(false);
    expect(acted.view(KEY, at('10'))?.metadata.resourceVersion).toBe('10');
    expect(acted.observed(KEY, at('12', 'Working'))).toBe(true);

    const notActed = createOwnWrites();
    notActed.record(at('11', 'Starting'), '10', false);
    expect(notActed.observed(KEY, at('11', 'Starting'))).toBe(true);
  });

  it('outlast the late event of the replaced version itself (a pass that read the API ahead of the cache)', () => {
    const own = createOwnWrites();
    own.record(at('11', 'Starting'), '10', true);
    expect(own.observed(KEY, at('10'))).toBe(true);
    expect(own.view(KEY, at('10'))?.metadata.resourceVersion).toBe('11');
    expect(own.observed(KEY, undefined)).toBe(true);
    expect(own.view(KEY, at('10'))?.metadata.resourceVersion).toBe('10');
  });
});
