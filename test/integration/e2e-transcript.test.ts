// End to end, as the phone sees it: a plan-first command answered with button taps, a typed
// revision, a review that spans three diff pictures with the remaining file counted, and the pull
// request. The conversation is written to test-results/transcripts/plan-first.md and the pictures
// beside it, so a person can read the exchange and look at the pages. Then tool requests allowed
// by a tap on five phones at once (load), one of them with a slow tail after the tap (progress the
// cadence holds back, then 12 s of work): how often the echo of the choice went out alone. Each
// flow's message count is printed and held to what it took before the echo learnt to wait. The
// relay keeps make dev's progress cadence (15 s).
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeMessage } from '../fakes/twilio.ts';
import { startE2E, type E2E, type Phone } from '../support/e2e.ts';

const OUT = 'test-results/transcripts';
const ALLOW_PHONES = ['+14155550182', '+14155550183', '+14155550184', '+14155550185'];
const SLOW_TAIL_PHONE = '+14155550186';
/** Messages each flow took before the echo waited for a message on its way (the most seen); none may take more. */
const BEFORE = { planFirst: 9, allow: 5, slowTail: 8 };
const counts: string[] = [];
let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({
    numbers: ['+14155550181', ...ALLOW_PHONES, SLOW_TAIL_PHONE],
    relayEnv: { RELAY_PROGRESS_BATCH: '15s' },
  });
}, 90_000);
afterAll(async () => {
  console.log(`messages per flow:\n${counts.join('\n')}`);
  await e2e?.stop();
});

/** What the user did, in order, beside what the phone received. */
function recorder(phone: Phone) {
  const sent: Array<{ at: number; line: string }> = [];
  return {
    async send(text: string, shown = text) {
      sent.push({ at: Date.now(), line: `you > ${shown}` });
      await phone.send(text);
    },
    async tap(message: FakeMessage, title: string) {
      sent.push({ at: Date.now(), line: `you > [taps ${title}]` });
      await phone.tap(message, title);
    },
    lines(pictures: Map<FakeMessage, string>) {
      const received = phone.received().map((m) => ({
        at: m.at,
        line: [
          `bot > ${m.body}`,
          ...(pictures.has(m) ? [`      (picture: ${pictures.get(m)})`] : []),
          ...(m.buttons ? [`      [${m.buttons.map((b) => b.title).join('] [')}]`] : []),
        ].join('\n'),
      }));
      return [...sent, ...received].sort((a, b) => a.at - b.at).map((e) => e.line);
    },
  };
}

describe('end to end: a plan-first session, as the phone sees it', () => {
  it('plan → revise → tap approve → three diff pages and the rest counted → tap approve → pull request', async () => {
    const phone = e2e.phone('+14155550181');
    const user = recorder(phone);
    const body = Array.from({ length: 45 }, (_, i) => `greeting ${i}: hello`).join('\\n');
    const files = ['en.txt', 'fr.txt', 'de.txt', 'es.txt'];
    const script = [
      'plan: script:',
      'plan: ## Greetings\\n- Add a greetings file per language (en, fr, de, es)\\n- Say done',
      ...files.map((f) => `write: greetings/${f} = ${body}`),
      'say: Added four greetings files.',
    ].join('\n');
    await user.send(script, 'plan: add a greetings file per language (en, fr, de, es)');
    const plan = await phone.next(/The agent's plan:/);
    expect(plan.buttons?.map((b) => b.title)).toEqual(['approve', 'reject']);
    await user.send('Keep each file under 50 lines');
    const revised = await phone.next(/The agent's plan:[\s\S]*Keep each file under 50 lines/);
    await user.tap(revised, 'approve');

    const more = await phone.next(/1 more file not shown — reply \*diff <file>\*/, 120_000);
    const review = await phone.next(/Reply \*approve\* to open a pull request/);
    expect(review.buttons?.map((b) => b.title)).toEqual(['approve', 'reject']);
    const pages = phone.received().filter((m) => m.mediaUrls.length);
    expect(pages).toHaveLength(3);
    expect(pages.at(-1)).toBe(more);
    await user.tap(review, 'approve');
    await phone.next(/Pull request opened: https:\/\/\S+\/pull\/\d+/);

    mkdirSync(OUT, { recursive: true });
    const pictures = new Map<FakeMessage, string>();
    for (const [i, page] of pages.entries()) {
      const png = Buffer.from(await (await fetch(page.mediaUrls[0]!)).arrayBuffer());
      expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
      const path = `${OUT}/plan-first-page-${i + 1}.png`;
      writeFileSync(path, png);
      pictures.set(page, path);
    }
    const transcript = user.lines(pictures);
    writeFileSync(
      `${OUT}/plan-first.md`,
      `# A plan-first session, as the phone sees it\n\n\`\`\`\n${transcript.join('\n')}\n\`\`\`\n`,
    );
    console.log(`phone transcript (plan first, buttons, three pages):\n${transcript.join('\n')}`);
    for (const message of phone.received()) expect(message.body.length).toBeLessThanOrEqual(1600);
    const [session] = (await e2e.list()).filter((s) => s.spec.phone === phone.number);
    expect(session!.spec.decisions?.map((d) => d.action)).toEqual(['revise', 'approve', 'approve']);
    expect(session!.status?.phase).toBe('Succeeded');
    counts.push(`plan first: ${phone.received().length} messages (before: at most ${BEFORE.planFirst})`);
    expect(phone.received().length).toBeLessThanOrEqual(BEFORE.planFirst);
  }, 180_000);
});

/** A tool request allowed by a tap, its review approved by a tap; what the phone received. */
async function allowFlow(phone: Phone, steps: string[]): Promise<FakeMessage[]> {
  await phone.send(['script:', ...steps].join('\n'));
  const ask = await phone.next(/🔐.*allowed-\d\.txt/s, 120_000);
  await phone.tap(ask, 'allow');
  const review = await phone.next(/Reply \*approve\* to open a pull request/, 120_000);
  await phone.tap(review, 'approve');
  await phone.next(/Pull request opened: https:\/\/\S+\/pull\/\d+/);
  return phone.received();
}

const bash = (i: number) => `tool: Bash {"command":"echo allowed > allowed-${i}.txt"}`;
const echoAlone = (received: FakeMessage[]) => received.some((m) => m.body.trim() === 'Allowed Bash once.');

describe('end to end: allow by tap on five phones at once', () => {
  it('the echo of the choice rides on the next message; how often it went alone is printed', async () => {
    const slowTail = [
      `progress: Looking at the code`,
      'sleep: 1500',
      bash(9),
      'progress: Ran the command',
      'sleep: 12000',
      'say: Wrote allowed-9.txt.',
    ];
    const [slow, ...quick] = await Promise.all([
      allowFlow(e2e.phone(SLOW_TAIL_PHONE), slowTail),
      ...ALLOW_PHONES.map((number, i) => allowFlow(e2e.phone(number), [bash(i), `say: Wrote allowed-${i}.txt.`])),
    ]);
    for (const [i, received] of [...quick, slow!].entries()) {
      expect(
        received.filter((m) => m.body.startsWith('Allowed Bash once.')),
        `flow ${i + 1}: the echo, once`,
      ).toHaveLength(1);
    }
    quick.forEach((received, i) =>
      counts.push(`allow, phone ${i + 1}: ${received.length} messages (before: at most ${BEFORE.allow})`),
    );
    counts.push(`allow with a slow tail: ${slow!.length} messages (before: at most ${BEFORE.slowTail})`);
    counts.push(
      `the echo went alone in ${quick.filter(echoAlone).length} of ${quick.length} quick flows, ` +
        `${echoAlone(slow!) ? 1 : 0} of 1 slow-tail flow`,
    );
    console.log(`phone transcript (allow with a slow tail):\n${slow!.map((m) => `bot > ${m.body}`).join('\n')}`);
    for (const received of quick) expect(received.length).toBeLessThanOrEqual(BEFORE.allow);
    expect(slow!.length).toBeLessThanOrEqual(BEFORE.slowTail);
  }, 240_000);
});
