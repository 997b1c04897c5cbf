// End to end through the whole stack (real Claude Code against the scripted model, fake Twilio):
// a long run's progress at growing gaps within its budget, a phone over its daily spend, and a
// run that pauses at its spending threshold until the user says continue or stop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';

const FIRST_GAP_MS = 1000;
const MAX_GAP_MS = 4000;
const PROGRESS_MESSAGES = 4;
/** A send's own latency can shorten the gap the fake Twilio sees between two arrivals. */
const SEND_SLACK_MS = 300;

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({
    numbers: ['+14155550161', '+14155550162', '+14155550163', '+14155550164'],
    relayEnv: {
      RELAY_PROGRESS_BATCH: `${FIRST_GAP_MS}ms`, RELAY_PROGRESS_MAX_GAP: `${MAX_GAP_MS}ms`, RELAY_PROGRESS_MESSAGES: String(PROGRESS_MESSAGES),
      // one scripted command costs a few cents: the second one of the day is over this
      RELAY_DAILY_BUDGET_USD: '0.01',
      // a file write costs about a cent of (scripted) model use: each one pauses; progress steps never ask
      RELAY_RUN_PAUSE_USD: '0.01',
    },
  });
}, 90_000);
afterAll(async () => e2e?.stop());

describe('end to end: budgets', () => {
  it('a long run: the first step at once, then batches at growing gaps, no more than the budget', async () => {
    const phone = e2e.phone('+14155550161');
    const steps = Array.from({ length: 24 }, (_, i) => `progress: step ${i + 1}\nsleep: 400`).join('\n');
    await phone.send(`script:\n${steps}\nsay: all steps done`);
    await phone.next(/all steps done/, 180_000);
    const progress = phone.received().filter((m) => m.body.startsWith('⏳'));
    console.log(`phone transcript (long run):\n${phone.received().map((m) => `${m.at} bot > ${m.body}`).join('\n')}`);

    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress.length).toBeLessThanOrEqual(PROGRESS_MESSAGES);
    expect(progress[0]!.body).toMatch(/^⏳ step 1$/m);
    const gaps = progress.slice(1).map((m, i) => m.at - progress[i]!.at);
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(Math.min(MAX_GAP_MS, FIRST_GAP_MS * 2 ** i) - SEND_SLACK_MS));
    // The steps arrive in order, none twice.
    const shown = progress.flatMap((m) => [...m.body.matchAll(/step (\d+)/g)].map((s) => Number(s[1])));
    expect(shown).toEqual([...shown].sort((a, b) => a - b));
    expect(new Set(shown).size).toBe(shown.length);
    if (progress.length === PROGRESS_MESSAGES) expect(progress.at(-1)!.body).toMatch(/reply \*status\*/);
    for (const message of phone.received()) expect(message.body.length).toBeLessThanOrEqual(1600);
  }, 240_000);

  it('a phone over its daily budget is refused with the spend shown; status shows today\'s spend', async () => {
    const phone = e2e.phone('+14155550162');
    await phone.send('script:\nprogress: looking around\nprogress: still looking\nsay: the first one of the day');
    const done = await phone.next(/the first one of the day/, 120_000);
    expect(done.body).toMatch(/\$0\.\d\d/);
    const [session] = (await e2e.list()).filter((s) => s.spec.phone === phone.number);
    const spent = session!.status!.result!.costUsd!;
    expect(spent).toBeGreaterThan(0.01);

    await phone.send('script:\nsay: one too many');
    const refused = await phone.next(/budget is spent/);
    expect(refused.body).toBe(`Today's budget is spent: $${spent.toFixed(2)} of $0.01. New commands start again after midnight (UTC). Commands already running still finish; queued ones do not start.`);
    expect((await e2e.list()).filter((s) => s.spec.phone === phone.number)).toHaveLength(1);

    await phone.send('status');
    expect((await phone.next(/Today: /)).body).toContain(`Today: $${spent.toFixed(2)} of $0.01`);
  }, 180_000);

  it('a run past its spending threshold pauses; continue resumes it, stop ends it like cancel', async () => {
    const phone = e2e.phone('+14155550163');
    await phone.send('script:\nwrite: one.txt = 1\nwrite: two.txt = 2\nsay: wrote both');
    const pause = await phone.next(/💲 This run has used \$\d+\.\d\d so far\. Continue\?/, 120_000);
    expect(pause.body.length).toBeLessThanOrEqual(1600);
    const paused = (await e2e.list()).find((s) => s.spec.phone === phone.number)!;
    expect(paused.spec.costPauseUsd).toBe(0.01);
    expect(paused.status?.pending).toMatchObject({ kind: 'cost', costUsd: expect.any(Number) });
    expect(paused.status!.result!.costUsd!).toBeGreaterThanOrEqual(0.01);
    for (let answered = 0; ; answered++) {
      await phone.send('continue');
      const next = await phone.next(/💲 This run has used|Reply \*approve\*/, 120_000);
      if (/Reply \*approve\*/.test(next.body)) break;
      expect(answered).toBeLessThan(5);
    }
    await phone.send('reject');
    await phone.next(/undone/);

    const stopper = e2e.phone('+14155550164');
    await stopper.send('script:\nwrite: three.txt = 3\nwrite: four.txt = 4\nsay: never said');
    await stopper.next(/💲 This run has used/, 120_000);
    await stopper.send('stop');
    await stopper.next(/cancelled/);
    const stopped = (await e2e.list()).find((s) => s.spec.phone === stopper.number)!;
    expect(stopped.status?.phase).toBe('Cancelled');
    expect(stopper.received().some((m) => /never said/.test(m.body))).toBe(false);
  }, 300_000);
});
