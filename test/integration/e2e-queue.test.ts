// End to end: commands while busy run one after another, the sixth queued is refused, and
// cancel kills the agent, clears the queue and says so (and logs no error).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayCaughtUp } from '../support/caught-up.ts';
import { startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: ['+14155550141', '+14155550142'] });
}, 90_000);
afterAll(async () => e2e?.stop());

const mine = async (phone: string) => (await e2e.list()).filter((s) => s.spec.phone === phone);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('end to end: queue and cancel', () => {
  it('commands while busy run one after another in order; a sixth queued is refused', async () => {
    const phone = e2e.phone('+14155550141');
    await phone.send('script:\nprogress: first started\nsleep: 2500\nsay: first done');
    await phone.next(/first started/);
    for (const n of [2, 3, 4, 5, 6, 7])
      await phone.send(`script:\nprogress: command ${n} started\nsay: command ${n} done`);
    const refusal = await phone.next(/queue is full|Too many|5 commands/i);
    expect(refusal.body).not.toMatch(/Queued/);
    expect(await mine(phone.number)).toHaveLength(6);
    expect(refusal.body).not.toMatch(/command 7/);

    await phone.next(/first done/);
    for (const n of [2, 3, 4, 5, 6]) {
      // A quick run's progress may ride in the message with its result: started at or before done.
      // (the "Starting your queued command" line quotes the prompt, so the agent's own lines are matched by their form)
      const done = await phone.next(new RegExp(`^command ${n} done$`, 'm'));
      const upToDone = phone.received().slice(0, phone.received().indexOf(done) + 1);
      expect(upToDone.filter((m) => new RegExp(`⏳ command ${n} started`).test(m.body))).toHaveLength(1);
    }
    const sessions = await mine(phone.number);
    expect(
      sessions.map((s) => s.status?.phase),
      sessions.map((s) => `${s.metadata.name} ${s.spec.prompt.split('\n')[1]} ${s.status?.phase}`).join('\n'),
    ).toEqual(Array(6).fill('Succeeded'));
    expect(phone.received().filter((m) => /command 7/.test(m.body))).toEqual([]);
    // One at a time: each started after the previous one completed (startTime has whole seconds).
    const second = (t: string) => Math.floor(Date.parse(t) / 1000) * 1000;
    for (let i = 1; i < sessions.length; i++) {
      expect(Date.parse(sessions[i]!.status!.startTime!)).toBeGreaterThanOrEqual(
        second(sessions[i - 1]!.status!.completionTime!),
      );
    }
  }, 180_000); // seven agent runs one after another: ~40 s on a quiet machine, over 60 s at load 20

  it('cancel while working kills the agent, clears the queue and replies', async () => {
    const phone = e2e.phone('+14155550142');
    await phone.send('script:\nprogress: long job started\nsleep: 60000\nsay: never');
    await phone.next(/long job started/);
    await phone.send('script:\nsay: queued behind');
    await phone.next(/Queued/);
    const [active] = await mine(phone.number);
    const pod = e2e.stack.nodeAgent.processOf(`${e2e.stack.runnerNamespace}/${active!.status!.podName}`);
    expect(pod).toBeDefined();
    const pid = pod!.child.pid!;

    const logsBefore = e2e.logs().length;
    await phone.send('cancel');
    const reply = await phone.next(/cancel/i);
    expect(reply.body).toMatch(/Cancelled|Stopped/i);
    await eventually(async () => {
      expect((await mine(phone.number)).map((s) => s.status?.phase)).toEqual(['Cancelled', 'Cancelled']);
    }, 20_000);
    await eventually(() => expect(alive(pid)).toBe(false), 20_000);
    await relayCaughtUp(e2e, phone);
    expect(phone.unread().filter((m) => /queued behind|never/.test(m.body))).toEqual([]);
    // A cancel is an expected end: no component logs it as an error.
    expect(
      e2e
        .logs()
        .slice(logsBefore)
        .filter((line) => /"level":(50|60)\b/.test(line)),
    ).toEqual([]);
  });
});
