// The phone's view of its Sessions on an injected clock: a Session the relay just created is kept in
// view until the informer has it, for at most a minute, and the phone's last message is timed by it.
import { describe, expect, it } from 'vitest';
import { ANNOTATION_RECEIVED_AT } from '../../common/session/order.ts';
import type { Session } from '../../common/session/schema.ts';
import { PhoneView } from '../../relay/inbound/phone-view.ts';
import { MemorySessions } from '../support/memory-sessions.ts';

const phone = '+15555550100';
const created = (name: string, at: number): Session =>
  ({
    metadata: { name, annotations: { [ANNOTATION_RECEIVED_AT]: new Date(at).toISOString() } },
    spec: { phone },
  }) as unknown as Session;

describe('PhoneView', () => {
  it('keeps a Session it created in view for a minute of its clock while the informer lacks it', () => {
    let now = Date.parse('2026-03-01T12:00:00Z');
    const view = new PhoneView(new MemorySessions('ns'), () => now);
    view.remember(created('s1', now));
    now += 59_000;
    expect(view.sessions(phone).map((s) => s.metadata.name)).toEqual(['s1']);
    now += 2_000;
    expect(view.sessions(phone)).toEqual([]);
  });

  it('times the phone’s last message by its clock', () => {
    const now = Date.parse('2026-03-01T12:00:00Z');
    const view = new PhoneView(new MemorySessions('ns'), () => now);
    view.noteInbound(phone);
    expect(view.lastInboundAt(phone)).toBe(now);
  });
});
