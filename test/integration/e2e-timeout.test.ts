// End to end: an unanswered approval gets a reminder, then times out; the changes stay on the volume.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayCaughtUp } from '../support/caught-up.ts';
import { startE2E, type E2E } from '../support/e2e.ts';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({
    numbers: ['+14155550151'],
    relayEnv: { TETHER_APPROVAL_TIMEOUT: '8s', RELAY_REMINDER_BEFORE: '5s' },
  });
}, 90_000);
afterAll(async () => e2e?.stop());

describe('end to end: approval timeout', () => {
  it('reminds before the deadline, then times out and keeps the changes', async () => {
    const phone = e2e.phone('+14155550151');
    await phone.send('script:\nwrite: kept.txt = still here\nsay: wrote it');
    const prompt = await phone.next(/Reply \*approve\*/);
    const reminder = await phone.next(/Still waiting|expires in/i, 15_000);
    expect(reminder.at - prompt.at).toBeGreaterThanOrEqual(2000);
    const expired = await phone.next(/expired/i, 20_000);
    expect(expired.body).toMatch(/kept/i);
    expect(expired.at - prompt.at).toBeGreaterThanOrEqual(7000);

    const [session] = await e2e.list();
    expect(session!.status?.phase).toBe('TimedOut');
    const file = join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, session!.spec.workspace, 'repo', 'kept.txt');
    expect(existsSync(file)).toBe(true);
    expect(e2e.github.pulls).toEqual([]);

    // A late "approve" does not publish anything.
    await phone.send('approve');
    await phone.next(/no longer open|Nothing is waiting/);
    await relayCaughtUp(e2e, phone);
    expect((await e2e.list())[0]!.spec.decisions ?? []).toEqual([]);
    expect(e2e.github.pulls).toEqual([]);
  });
});
