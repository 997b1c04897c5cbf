// Level-based end of a conversation in an end-to-end test: instead of waiting a while before asserting that
// nothing more reaches the phone, wait for the facts that say the relay has nothing more to send.
import { expect } from 'vitest';
import { isTerminal } from '../../common/session/state-machine.ts';
import { readDelivered } from '../../relay/delivered-state.ts';
import type { FakeMessage } from '../fakes/twilio.ts';
import type { E2E, Phone } from './e2e.ts';
import { eventually } from './eventually.ts';

const STATUS_ANSWER = /^(No session running|Session \S+ ·)/;

/**
 * Waits until the relay has recorded telling the phone the end of each of its finished Sessions, then sends
 * *status* and waits for the answer: the relay runs a phone's work in order, so whatever it was still sending
 * for the phone has gone by then. Returns the answer (to leave out of what is asserted after).
 */
export async function relayCaughtUp(e2e: E2E, phone: Phone): Promise<FakeMessage> {
  await eventually(async () => {
    const ended = (await e2e.list()).filter((s) => s.spec.phone === phone.number && isTerminal(s.status?.phase));
    expect(ended.map((s) => `${s.metadata.name} ${readDelivered(s).done}`)).toEqual(
      ended.map((s) => `${s.metadata.name} ${s.status?.phase}`),
    );
  }, 30_000);
  const before = phone.received().length;
  await phone.send('status');
  return eventually(() => {
    const answer = phone
      .received()
      .slice(before)
      .find((m) => STATUS_ANSWER.test(m.body));
    expect(answer, 'the answer to status').toBeDefined();
    return answer!;
  }, 30_000);
}
