// End to end: a follow-up command from the same phone continues the agent's conversation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: ['+14155550181', '+14155550182'] });
}, 90_000);
afterAll(async () => e2e?.stop());

const mine = async (phone: string) => (await e2e.list()).filter((s) => s.spec.phone === phone);

describe('end to end: follow-up commands', () => {
  it('resume the agent session id of the previous command; another phone starts its own', async () => {
    const phone = e2e.phone('+14155550181');
    await phone.send('script:\nsay: first answer');
    await phone.next(/first answer/);
    const [first] = await mine(phone.number);
    const id = first!.status?.result?.agentSessionId;
    expect(id).toMatch(/\S+/);
    expect(first!.spec.resumeAgentSession).toBeUndefined();

    await phone.send('script:\nsay: second answer');
    await phone.next(/second answer/);
    const [, second] = await mine(phone.number);
    expect(second!.spec.resumeAgentSession).toBe(id);
    expect(second!.status?.result?.agentSessionId).toBe(id);

    const other = e2e.phone('+14155550182');
    await other.send('script:\nsay: someone else');
    await other.next(/someone else/);
    const [theirs] = await mine(other.number);
    expect(theirs!.spec.resumeAgentSession).toBeUndefined();
    expect(theirs!.status?.result?.agentSessionId).not.toBe(id);
  });
});
