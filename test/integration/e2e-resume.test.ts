// End to end: a follow-up command from the same phone continues the agent's conversation, and is
// priced by its own model use: not by the conversation's total, which Claude Code reports for a
// resumed conversation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';

/** Identical resumed runs differ only by the conversation growing behind them. */
const PRICE_SPREAD = 0.05;
const RUNS = 4;

let e2e: E2E;
let metricsUrl: string;
beforeAll(async () => {
  const metricsPort = await freePort();
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  e2e = await startE2E({
    numbers: ['+14155550181', '+14155550182', '+14155550183'],
    controllerEnv: { TETHER_METRICS_PORT: String(metricsPort) },
  });
}, 90_000);
afterAll(async () => e2e?.stop());

const mine = async (phone: string) => (await e2e.list()).filter((s) => s.spec.phone === phone);

/** The controller's tether_session_cost_usd_total, all outcomes. */
async function costMetric(): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  return [...text.matchAll(/^tether_session_cost_usd_total\{[^}]*\} (\S+)$/gm)].reduce(
    (sum, m) => sum + Number(m[1]),
    0,
  );
}

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

  it("identical resumed runs cost the same; the day's total and the metric are their sum", async () => {
    // The Sessions of the test before may still be counted: start from a metric that holds them all.
    const metricBefore = await eventually(async () => {
      const spent = (await e2e.list()).reduce((sum, s) => sum + (s.status?.result?.costUsd ?? 0), 0);
      const counted = await costMetric();
      expect(counted).toBeCloseTo(spent, 6);
      return counted;
    });
    const phone = e2e.phone('+14155550183');
    for (let run = 1; run <= RUNS; run++) {
      await phone.send(`script:\nprogress: looking around\nsay: answer number ${run}`);
      await phone.next(new RegExp(`answer number ${run}`));
    }
    const runs = await mine(phone.number);
    expect(runs.slice(1).every((s) => s.spec.resumeAgentSession === runs[0]!.status?.result?.agentSessionId)).toBe(
      true,
    );
    const costs = runs.map((s) => s.status!.result!.costUsd!);
    console.log(
      `costs of ${RUNS} identical runs, the later ones resumed: ${costs.map((c) => `$${c.toFixed(4)}`).join(', ')}`,
    );
    expect(costs).toHaveLength(RUNS);
    for (const cost of costs) expect(Math.abs(cost - costs[0]!) / costs[0]!).toBeLessThan(PRICE_SPREAD);

    const total = costs.reduce((sum, c) => sum + c, 0);
    await phone.send('status');
    expect((await phone.next(/Today: /)).body).toContain(`Today: $${total.toFixed(2)} of $10.00`);
    // The controller counts a Session when it sees it end, which may be after the phone heard.
    await eventually(async () => expect((await costMetric()) - metricBefore).toBeCloseTo(total, 6));
  }, 240_000);
});
