// End to end: the local stack supervises its processes. The relay and then the controller are
// killed with SIGKILL (a real OS kill); each time one line names the component, the signal and
// when it restarts, the component comes back by itself, and the phone flow works again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: ['+14155550181'] });
}, 90_000);
afterAll(async () => e2e?.stop());

const supervisorLines = () => e2e.logs().filter((l) => l.startsWith('supervisor: '));
const healthy = async () => (await fetch(`${e2e.stack.relayUrl}/healthz`).catch(() => undefined))?.ok === true;

describe('end to end: a supervised stack', () => {
  it('a SIGKILLed relay, then controller, is restarted with a line saying so, and the phone works again', async () => {
    const phone = e2e.phone('+14155550181');
    await phone.send('script:\nsay: before any kill');
    await phone.next(/before any kill/);

    for (const component of ['relay', 'controller'] as const) {
      const before = e2e.stack.process(component).child.pid;
      const killedAt = Date.now();
      e2e.stack.process(component).signal('SIGKILL');
      const line = await eventually(() => {
        const found = supervisorLines().find((l) => l.includes(`${component} was killed by SIGKILL`));
        expect(found).toBeDefined();
        return found!;
      });
      expect(line).toMatch(
        new RegExp(
          `^supervisor: ${component} was killed by SIGKILL at \\d\\d:\\d\\d:\\d\\d; restarting it in 1s \\(at ` +
            `\\d\\d:\\d\\d:\\d\\d\\)$`,
        ),
      );
      await eventually(() => expect(e2e.stack.process(component).child.pid).not.toBe(before), 10_000);
      await eventually(async () => expect(await healthy()).toBe(true), 30_000, 100);
      const backAfterMs = Date.now() - killedAt;
      const text = `after the ${component} kill`;
      await phone.send(`script:\nsay: ${text}`);
      await phone.next(new RegExp(text), 60_000);
      console.log(
        `[supervision] ${component} SIGKILL → running again after ${backAfterMs} ms, a new command answered after ` +
          `${Date.now() - killedAt} ms`,
      );
    }
    expect(supervisorLines().filter((l) => /was killed|exited/.test(l))).toHaveLength(2);
    expect(supervisorLines().filter((l) => /crash loop/.test(l))).toEqual([]);
  }, 150_000);
});
