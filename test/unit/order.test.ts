import { describe, expect, it } from 'vitest';
import { ANNOTATION_RECEIVED_AT, byArrival } from '../../common/session/order.ts';

const session = (name: string, created: string, receivedAt?: string) => ({
  metadata: {
    name,
    creationTimestamp: created,
    ...(receivedAt ? { annotations: { [ANNOTATION_RECEIVED_AT]: receivedAt } } : {}),
  },
});

describe("arrival order of a phone's commands", () => {
  it('orders commands of the same second by their millisecond stamp, not by their random names', () => {
    const sessions = [
      session('h-20261122090000-zzzz', '2026-11-22T09:00:00Z', '2026-11-22T09:00:00.100Z'),
      session('h-20261122090000-aaaa', '2026-11-22T09:00:00Z', '2026-11-22T09:00:00.900Z'),
      session('h-20261122090000-mmmm', '2026-11-22T09:00:00Z', '2026-11-22T09:00:00.500Z'),
    ];
    expect(sessions.sort(byArrival).map((s) => s.metadata.name.slice(-4))).toEqual(['zzzz', 'mmmm', 'aaaa']);
  });

  it('falls back to the creation second, then the name, without a (valid) stamp', () => {
    const sessions = [
      session('b', '2026-11-22T09:00:01Z'),
      session('c', '2026-11-22T09:00:00Z', 'not a time'),
      session('a', '2026-11-22T09:00:00Z'),
    ];
    expect(sessions.sort(byArrival).map((s) => s.metadata.name)).toEqual(['a', 'c', 'b']);
  });
});
