// End to end: restarts of controller and relay mid-session lose and repeat nothing; a runner killed
// twice fails the session (the first loss is replaced) and the user is told.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayCaughtUp } from '../support/caught-up.ts';
import { startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';
import { isAlive, processTree } from '../support/runner.ts';
import type { FakeMessage } from '../fakes/twilio.ts';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: ['+14155550161', '+14155550162', '+14155550163'] });
}, 90_000);
afterAll(async () => e2e?.stop());

const bodies = (messages: FakeMessage[]) => messages.map((m) => m.body);
function expectNoRepeats(messages: FakeMessage[]) {
  const seen = bodies(messages).filter((b) => !/Workspace ready/.test(b));
  expect(seen).toEqual([...new Set(seen)]);
}
const latest = async (phone: string) => (await e2e.list()).filter((s) => s.spec.phone === phone).at(-1)!;

describe('end to end: restarts and crashes', () => {
  it('controller restarted mid-session → the session completes, no duplicate messages', async () => {
    const phone = e2e.phone('+14155550161');
    await phone.send('script:\nprogress: step one\nsleep: 3000\nprogress: step two\nsay: finished after restart');
    await phone.next(/step one/);
    await e2e.stack.restart('controller');
    // "step two" may ride in the result's message (docs/relay.md, "Budgets").
    await phone.next(/finished after restart/);
    expect(phone.received().some((m) => /step two/.test(m.body))).toBe(true);
    expect((await latest(phone.number)).status?.phase).toBe('Succeeded');
    await relayCaughtUp(e2e, phone);
    expectNoRepeats(phone.received());
    expect(bodies(phone.received()).filter((b) => /^On it/.test(b))).toHaveLength(1);
  });

  it('relay restarted mid-session → nothing lost, nothing repeated', async () => {
    const phone = e2e.phone('+14155550162');
    await phone.send(
      'script:\nprogress: before the restart\nsleep: 2500\nprogress: during the restart\nwrite: r.txt = x\nsay: done',
    );
    await phone.next(/before the restart/);
    await e2e.stack.restart('relay');
    await phone.next(/during the restart/);
    await phone.next(/Reply \*approve\*/);
    await phone.send('approve');
    await phone.next(/Pull request opened/);
    await relayCaughtUp(e2e, phone);
    expectNoRepeats(phone.received());
    expect(bodies(phone.received()).filter((b) => /Reply \*approve\*/.test(b))).toHaveLength(1);
  });

  it('runner process killed twice → replaced once, then Failed, and the user is told what happened', async () => {
    const phone = e2e.phone('+14155550163');
    await phone.send('script:\nprogress: working hard\nsleep: 60000\nsay: never');
    await phone.next(/working hard/);
    const first = await latest(phone.number);
    e2e.stack.nodeAgent.processOf(`${e2e.stack.runnerNamespace}/${first.status!.podName}`)!.signal('SIGKILL');
    // The first loss: a new Pod continues the run (e2e-runner-lost.test.ts); the second ends it.
    await phone.next(/The runner restarted; continuing where it stopped/);
    const session = await eventually(async () => {
      const found = await latest(phone.number);
      expect(found.status?.runnerRestarts).toBe(1);
      return found;
    });
    const pod = `${e2e.stack.runnerNamespace}/${session.status!.podName}`;
    const proc = await eventually(() => e2e.stack.nodeAgent.processOf(pod)!);
    // Claude Code runs in the agent container; the runner (the supervisor) is what gets killed.
    const agentContainer = await eventually(() => e2e.stack.nodeAgent.processOf(pod, 'agent')!);
    const claudeCode = await eventually(() => {
      const found = processTree(agentContainer.child.pid!).filter((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('claude-agent-sdk'),
      );
      expect(found).toHaveLength(1);
      return found[0]!;
    });
    proc.signal('SIGKILL');
    const told = await phone.next(/❌/);
    expect(told.body).toMatch(/stopped|crashed|lost|error/i);
    expect(told.body).not.toMatch(/Error:|at .*\.ts:\d+|pods? "/);
    await eventually(async () => expect((await latest(phone.number)).status?.phase).toBe('Failed'));
    expect(isAlive(claudeCode), 'Claude Code dies with the runner Pod').toBe(false);
  });
});
