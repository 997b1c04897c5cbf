// End to end: one-tap answers. Requests reach the phone with WhatsApp quick-reply buttons (the
// fake Twilio's Content API renders them), a tap answers the request its payload names, the next
// message repeats the choice, and a tap on an old or replayed message changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayCaughtUp } from '../support/caught-up.ts';
import { startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: ['+14155550141', '+14155550142', '+14155550143'] });
}, 90_000);
afterAll(async () => e2e?.stop());

const sessionOf = async (phone: string) => (await e2e.list()).filter((s) => s.spec.phone === phone).at(-1)!;
const titles = (message: { buttons?: Array<{ title: string }> }) => message.buttons?.map((b) => b.title);

describe('end to end: one-tap answers', () => {
  it('a tool request answered by a tap; the next message says what was allowed', async () => {
    const phone = e2e.phone('+14155550141');
    await phone.send('script:\ntool: Bash {"command":"echo ok > tapped.txt"}\nprogress: ran the command\nsay: ran it');
    const ask = await phone.next(/🔐.*echo ok > tapped\.txt/s);
    expect(titles(ask)).toEqual(['allow', 'allow always', 'deny']);
    await phone.tap(ask, 'allow');
    const echoed = await phone.next(/^Allowed Bash once\./);
    expect(echoed.body).toMatch(/ran the command|ran it/);
    const session = await sessionOf(phone.number);
    expect(session.spec.decisions).toEqual([
      expect.objectContaining({
        requestId: session.spec.decisions![0]!.requestId,
        action: 'allow',
        scope: 'once',
        by: expect.stringMatching(/^twilio:/),
      }),
    ]);
    await phone.next(/Reply \*approve\*/);
    await phone.send('reject'); // typed keywords still answer the open request
    await phone.next(/undone/i);
  });

  it('a question answered by a tap; the choice is repeated; a second tap on it is refused', async () => {
    const phone = e2e.phone('+14155550142');
    await phone.send('script:\nask: Which database should the cache use? | Redis | In-memory\nsay: will use it');
    const question = await phone.next(/❓ Which database should the cache use\?/);
    expect(titles(question)).toEqual(['1. Redis', '2. In-memory', 'reject']);
    expect(question.buttons!.map((b) => b.id)).toEqual([
      expect.stringMatching(/^1:question-/),
      expect.stringMatching(/^2:question-/),
      expect.stringMatching(/^reject:question-/),
    ]);
    const tapSid = await phone.tap(question, '2. In-memory');
    const echoed = await phone.next(/^You chose 2 \(In-memory\)\./);
    expect(echoed.body).toMatch(/will use it|Done/);
    const session = await sessionOf(phone.number);
    expect(session.spec.decisions).toEqual([
      expect.objectContaining({ action: 'answer', answers: { 'Which database should the cache use?': 'In-memory' } }),
    ]);

    // Twilio delivering the same webhook again: taken once, nothing more is said or written.
    await phone.tap(question, '2. In-memory', tapSid);
    // A later tap on the old message: a plain refusal, nothing changes.
    await phone.tap(question, '1. Redis');
    await phone.next(/That request is no longer open/);
    expect((await sessionOf(phone.number)).spec.decisions).toHaveLength(1);
    const status = await relayCaughtUp(e2e, phone);
    expect(phone.unread()).toEqual([status]);
  });

  it('approve by tap opens the pull request; a late reject tap on the same message changes nothing', async () => {
    const phone = e2e.phone('+14155550143');
    await phone.send('script:\nwrite: src/tapped.js = export const tapped = true;\nsay: Added a flag.');
    const review = await phone.next(/Reply \*approve\*/);
    expect(titles(review)).toEqual(['approve', 'reject']);
    await phone.tap(review, 'approve');
    await phone.next(/Pull request opened: https:\/\/\S+\/pull\/\d+/);
    const pulls = e2e.github.pulls.length;

    await phone.tap(review, 'reject');
    await phone.next(/That request is no longer open/);
    await eventually(async () => expect((await sessionOf(phone.number)).status?.phase).toBe('Succeeded'));
    expect(e2e.github.pulls.length).toBe(pulls);
    expect((await sessionOf(phone.number)).spec.decisions).toEqual([expect.objectContaining({ action: 'approve' })]);
    console.log(
      `phone transcript (buttons):\n${phone
        .received()
        .map((m) => `bot > ${m.body}${m.buttons ? `\n      [${m.buttons.map((b) => b.title).join('] [')}]` : ''}`)
        .join('\n')}`,
    );
  });
});
