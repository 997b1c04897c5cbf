// End to end through the whole stack (real Claude Code against the scripted model, fake Twilio):
// a long run's progress at growing gaps within its budget, a phone over its daily spend (on
// arrival, when a queued command's turn comes, and after clean-up), and (on a second stack) a run
// that pauses at its spending threshold until the user says continue or stop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_DELIVERED, commandSessionName } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { writeDelivered } from '../../relay/delivered-state.ts';
import { eventually } from '../support/eventually.ts';
import { startE2E, type E2E } from '../support/e2e.ts';

const FIRST_GAP_MS = 1000;
const MAX_GAP_MS = 4000;
const PROGRESS_MESSAGES = 4;
/** A send's own latency can shorten the gap the fake Twilio sees between two arrivals. */
const SEND_SLACK_MS = 300;

/**
 * A command that was queued while the phone was still under budget (the relay's own create, with
 * the same labels and spec as the phone's earlier command): what the controller must refuse later.
 */
async function queuedBehind(e2e: E2E, first: Session, prompt: string, cancel = false): Promise<Session> {
  const { phone, repo, workspace, costPauseUsd } = first.spec;
  const spec = {
    phone,
    prompt,
    repo,
    workspace,
    ...(costPauseUsd ? { costPauseUsd } : {}),
    ...(cancel ? { cancel } : {}),
  };
  return e2e.sessions.create(
    first.metadata.namespace!,
    commandSessionName(e2e.stack.phoneHash(phone), `SM${prompt}${Date.now()}`),
    spec,
    {
      labels: first.metadata.labels,
      annotations: { [ANNOTATION_DELIVERED]: writeDelivered({ n: 1, seq: 0, started: false, queued: true }) },
    },
  );
}

/** Polls the stack until `found` returns something (no deadline of its own: the test's timeout is it). */
async function until<T>(e2e: E2E, found: (sessions: Session[]) => T | undefined): Promise<T> {
  for (;;) {
    const hit = found(await e2e.list());
    if (hit !== undefined) return hit;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('end to end: budgets', () => {
  let e2e: E2E;
  beforeAll(async () => {
    e2e = await startE2E({
      numbers: ['+14155550161', '+14155550162', '+14155550165', '+14155550166'],
      relayEnv: {
        RELAY_PROGRESS_BATCH: `${FIRST_GAP_MS}ms`,
        RELAY_PROGRESS_MAX_GAP: `${MAX_GAP_MS}ms`,
        RELAY_PROGRESS_MESSAGES: String(PROGRESS_MESSAGES),
        // one scripted command costs a few cents: the second one of the day is over this
        TETHER_DAILY_BUDGET_USD: '0.01',
        RELAY_RUN_PAUSE_USD: '0',
      },
      // the controller's copy of the budget (the chart fills both from the same values); one finished Session kept per
      // phone
      controllerEnv: { TETHER_DAILY_BUDGET_USD: '0.01', TETHER_BUDGET_TIMEZONE: 'UTC', TETHER_HISTORY_COUNT: '1' },
    });
  }, 90_000);
  afterAll(async () => e2e?.stop());

  it('a long run: the first step at once, then batches at growing gaps, no more than the budget', async () => {
    const phone = e2e.phone('+14155550161');
    // 24 steps of 500 ms outlast the gaps to the budget's last message (1 + 2 + 4 s), however slow the machine.
    const steps = Array.from({ length: 24 }, (_, i) => `progress: step ${i + 1}\nsleep: 500`).join('\n');
    await phone.send(`script:\n${steps}\nsay: all steps done`);
    await phone.next(/all steps done/, 180_000);
    const progress = phone.received().filter((m) => m.body.startsWith('⏳'));
    console.log(
      `phone transcript (long run):\n${phone
        .received()
        .map((m) => `${m.at} bot > ${m.body}`)
        .join('\n')}`,
    );

    expect(progress).toHaveLength(PROGRESS_MESSAGES);
    expect(progress[0]!.body).toMatch(/^⏳ step 1$/m);
    const gaps = progress.slice(1).map((m, i) => m.at - progress[i]!.at);
    gaps.forEach((gap, i) =>
      expect(gap).toBeGreaterThanOrEqual(Math.min(MAX_GAP_MS, FIRST_GAP_MS * 2 ** i) - SEND_SLACK_MS),
    );
    // The steps arrive in order, none twice.
    const shown = progress.flatMap((m) => [...m.body.matchAll(/step (\d+)/g)].map((s) => Number(s[1])));
    expect(shown).toEqual([...shown].sort((a, b) => a - b));
    expect(new Set(shown).size).toBe(shown.length);
    expect(progress.at(-1)!.body).toMatch(/reply \*status\*/);
    for (const message of phone.received()) expect(message.body.length).toBeLessThanOrEqual(1600);
  }, 240_000);

  it("a phone over its daily budget is refused with the spend shown; status shows today's spend", async () => {
    const phone = e2e.phone('+14155550162');
    await phone.send('script:\nprogress: looking around\nprogress: still looking\nsay: the first one of the day');
    const done = await phone.next(/the first one of the day/, 120_000);
    expect(done.body).toMatch(/\$0\.\d\d/);
    const [session] = (await e2e.list()).filter((s) => s.spec.phone === phone.number);
    const spent = session!.status!.result!.costUsd!;
    expect(spent).toBeGreaterThan(0.01);

    await phone.send('script:\nsay: one too many');
    const refused = await phone.next(/budget is spent/);
    expect(refused.body).toBe(
      `Today's budget is spent: $${spent.toFixed(2)} of $0.01. New commands start again after midnight (UTC). ` +
        `Commands already running still finish; queued ones do not start.`,
    );
    expect((await e2e.list()).filter((s) => s.spec.phone === phone.number)).toHaveLength(1);

    await phone.send('status');
    expect((await phone.next(/Today: /)).body).toContain(`Today: $${spent.toFixed(2)} of $0.01`);
  }, 180_000);

  it("a command queued under budget does not start once the day's spend reached it", async () => {
    const phone = e2e.phone('+14155550165');
    await phone.send('script:\nask: Go on? | yes | no\nsay: the first one is done');
    await phone.next(/Go on\?/, 120_000);
    const first = (await e2e.list()).find((s) => s.spec.phone === phone.number)!;
    const queued = await queuedBehind(e2e, first, 'script:\nsay: must not run');
    await until(e2e, (all) =>
      all.find((s) => s.metadata.name === queued.metadata.name && s.status?.phase === 'Queued'),
    );
    await phone.send('yes');
    await phone.next(/the first one is done/, 120_000);
    const refused = await phone.next(/💲 Not started/, 60_000);
    expect(refused.body).toMatch(
      new RegExp(
        /^💲 Not started: ".*must not run" — today's budget is spent: \$\d+\.\d\d of \$0\.01; /.source +
          /new commands start again after midnight \(UTC\)\.$/.source,
      ),
    );
    const ended = (await e2e.list()).find((s) => s.metadata.name === queued.metadata.name)!;
    expect(ended.status?.phase).toBe('Failed');
    expect(ended.status?.startTime).toBeUndefined();
    expect(ended.status?.conditions?.find((c) => c.type === 'Finished')?.reason).toBe('OverBudget');
    expect(phone.received().some((m) => /Starting your queued/.test(m.body))).toBe(false);
  }, 240_000);

  it("clean-up keeps the Session that spent the day's budget, however many newer ones end", async () => {
    const phone = e2e.phone('+14155550166');
    await phone.send('script:\nprogress: looking around\nprogress: still looking\nsay: the expensive one');
    await phone.next(/the expensive one/, 120_000);
    const expensive = (await e2e.list()).find((s) => s.spec.phone === phone.number)!;
    expect(expensive.status!.result!.costUsd!).toBeGreaterThan(0.01);
    // Two that cost nothing end after it: one more than the history keeps (TETHER_HISTORY_COUNT=1).
    const [older] = [
      await queuedBehind(e2e, expensive, 'cheap one', true),
      await queuedBehind(e2e, expensive, 'cheap two', true),
    ];
    await until(e2e, (all) => (all.some((s) => s.metadata.name === older!.metadata.name) ? undefined : true));
    expect((await e2e.list()).map((s) => s.metadata.name)).toContain(expensive.metadata.name);
    await phone.send('script:\nsay: over budget');
    expect((await phone.next(/budget is spent/)).body).toContain(
      `$${expensive.status!.result!.costUsd!.toFixed(2)} of $0.01`,
    );
  }, 180_000);
});

/**
 * A (scripted) model response costs about 7 cents (some 23k tokens of system prompt, tools and
 * messages): a run's first response stays under this, its second crosses it.
 */
const PAUSE_USD = 0.1;

/** Answers *continue* at each cost pause until the review comes. */
async function continueToReview(phone: ReturnType<E2E['phone']>): Promise<void> {
  for (let answered = 0; ; answered++) {
    const next = await phone.next(/💲 This run has used|Reply \*approve\*/, 120_000);
    if (/Reply \*approve\*/.test(next.body)) return;
    expect(answered).toBeLessThan(5);
    await phone.send('continue');
  }
}

describe('end to end: the spending pause', () => {
  let e2e: E2E;
  beforeAll(async () => {
    e2e = await startE2E({
      numbers: ['+14155550163', '+14155550164', '+14155550167'],
      relayEnv: { RELAY_RUN_PAUSE_USD: String(PAUSE_USD), TETHER_DAILY_BUDGET_USD: '100' },
      controllerEnv: { TETHER_DAILY_BUDGET_USD: '100' },
    });
  }, 90_000);
  afterAll(async () => e2e?.stop());

  it('a run past its spending threshold pauses; continue resumes it; stop ends that run only', async () => {
    const phone = e2e.phone('+14155550163');
    await phone.send('script:\nwrite: one.txt = 1\nwrite: two.txt = 2\nsay: wrote both');
    const pause = await phone.next(/💲 This run has used \$\d+\.\d\d so far\. Continue\?/, 120_000);
    expect(pause.body.length).toBeLessThanOrEqual(1600);
    const paused = (await e2e.list()).find((s) => s.spec.phone === phone.number)!;
    expect(paused.spec.costPauseUsd).toBe(PAUSE_USD);
    expect(paused.status?.pending).toMatchObject({ kind: 'cost', costUsd: expect.any(Number) });
    expect(paused.status!.result!.costUsd!).toBeGreaterThanOrEqual(PAUSE_USD);
    await phone.send('continue');
    await continueToReview(phone);
    await phone.send('reject');
    await phone.next(/undone/);

    const stopper = e2e.phone('+14155550164');
    await stopper.send('script:\nwrite: three.txt = 3\nwrite: four.txt = 4\nsay: never said');
    await stopper.next(/💲 This run has used/, 120_000);
    const first = (await e2e.list()).find((s) => s.spec.phone === stopper.number)!;
    await queuedBehind(e2e, first, 'script:\nsay: the queued one ran');
    await until(e2e, (all) =>
      all.find((s) => s.spec.prompt.includes('the queued one') && s.status?.phase === 'Queued'),
    );
    await stopper.send('stop');
    expect((await stopper.next(/stopped at its cost pause/)).body).toMatch(/your queued commands still start/);
    // The phone may hear it (from the runner's Cancelled and the cost decision) before the controller records the
    // reason.
    await eventually(async () => {
      const stopped = (await e2e.list()).find((s) => s.metadata.name === first.metadata.name)!;
      expect(stopped.status?.phase).toBe('Cancelled');
      expect(stopped.status?.conditions?.find((c) => c.type === 'Finished')?.reason).toBe('CostStopped');
    });
    expect(stopper.received().some((m) => /never said|Dropped/.test(m.body))).toBe(false);
    // The queued command gets its turn (on the changes the stopped run left: it offers them for review).
    await stopper.next(/Starting your queued command/, 120_000);
    await continueToReview(stopper);
    await stopper.send('reject');
    await stopper.next(/undone/);
  }, 300_000);

  it('holds an agent that only reports progress (auto-allowed) at the threshold', async () => {
    const phone = e2e.phone('+14155550167');
    const steps = Array.from({ length: 8 }, (_, i) => `progress: step ${i + 1}`).join('\n');
    await phone.send(`script:\n${steps}\nsay: progress loop finished`);
    await phone.next(/💲 This run has used \$\d+\.\d\d so far\. Continue\?/, 120_000);
    await phone.send('stop');
    await phone.next(/stopped at its cost pause/);
    expect(phone.received().some((m) => /progress loop finished/.test(m.body))).toBe(false);
    const [session] = (await e2e.list()).filter((s) => s.spec.phone === phone.number);
    expect(session!.status?.phase).toBe('Cancelled');
  }, 180_000);
});
