import { describe, expect, it } from 'vitest';
import { SESSION_DEFAULTS } from '../../common/session/defaults.ts';
import { owed } from '../../relay/outbound/owed.ts';
import type { Session } from '../../common/session/schema.ts';

const queuedThenCancelled = (cancel?: boolean): Session => ({
  apiVersion: 'tether.dev/v1alpha1',
  kind: 'Session',
  metadata: { name: 'abc-20261122090000-q1q1', namespace: 'tether' },
  spec: {
    phone: '+14155550123',
    prompt: 'also update the README',
    repo: { url: 'x' },
    workspace: 'ws-abc',
    ...(cancel ? { cancel } : {}),
  },
  status: { phase: 'Cancelled' },
});
const options = { now: Date.now(), progressBatchMs: 3000, reminderBeforeMs: 300_000, defaults: SESSION_DEFAULTS };

describe('a queued command swept away', () => {
  it('is reported once when a reject or timeout before it cleared the queue', () => {
    const first = owed(queuedThenCancelled(), { n: 1, seq: 0, queued: true }, options);
    expect(first.parts.map((p) => p.text)).toEqual([
      expect.stringMatching(/^🗑️ Dropped your queued command "also update the README"/),
    ]);
    expect(first.next).toMatchObject({ n: 2, done: 'Cancelled' });
    expect(owed(queuedThenCancelled(), first.next, options).parts).toEqual([]);
  });

  it('is not reported again when the user cancelled it (the cancel reply said so)', () => {
    expect(owed(queuedThenCancelled(true), { n: 1, seq: 0, queued: true }, options).parts).toEqual([]);
  });
});
