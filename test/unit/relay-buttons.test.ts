// One-tap answers: payloads bound to one request, parsed strictly; which requests get buttons;
// what a tap routes to; the repeated choice.
import { describe, expect, it } from 'vitest';
import { SESSION_DEFAULTS } from '../../common/session/defaults.ts';
import type { Decision, Pending, Session } from '../../common/session/schema.ts';
import type { Delivered } from '../../relay/delivered-state.ts';
import type { PhoneContext } from '../../relay/inbound/router.ts';
import { routeTap } from '../../relay/inbound/tap.ts';
import { checkWebhook } from '../../relay/inbound/webhook.ts';
import { PAYLOAD_CHARS, bindReplies, buttonTitle, buttonsFor, parsePayload } from '../../relay/chat/buttons.ts';
import { ECHO_LONGEST_WAIT_MS, ECHO_WAIT_MS, askedOf, echoText, withEcho } from '../../relay/outbound/choice-echo.ts';
import { nextMessages } from '../../relay/outbound/next-messages.ts';
import { owed } from '../../relay/outbound/owed.ts';
import { tapWebhook } from '../support/twilio-webhook.ts';

const at = new Date().toISOString();
const question = (options: string[], id = 'question-0001'): Pending => ({
  id,
  kind: 'question',
  createdAt: at,
  questions: [
    { question: 'Which database?', header: 'DB', multiSelect: false, options: options.map((label) => ({ label })) },
  ],
});
const tool = (id = 'tool-0001'): Pending => ({
  id,
  kind: 'tool',
  tool: 'Bash',
  input: '{"command":"npm test"}',
  inputChars: 22,
  createdAt: at,
});
const changes = (id = 'changes-0001'): Pending => ({ id, kind: 'changes', summary: '1 file changed', createdAt: at });

const session = (
  pending?: Pending,
  decisions: Decision[] = [],
  phase: string = pending ? 'AwaitingApproval' : 'Working',
): Session => ({
  apiVersion: 'tether.dev/v1alpha1',
  kind: 'Session',
  metadata: { name: 'abc-20261122090000-7f3a', namespace: 'tether' },
  spec: { phone: '+14155550123', prompt: 'do it', repo: { url: 'x' }, workspace: 'ws-abc', decisions },
  status: { phase: phase as 'Working', ...(pending ? { pending } : {}) },
});
const options = {
  now: Date.now(),
  progressBatchMs: 3000,
  lastProgressAt: 0,
  reminderBeforeMs: 300_000,
  defaults: SESSION_DEFAULTS,
};
const told: Delivered = { n: 1, seq: 0, started: true };
const shownButtons = (pending: Pending) => buttonsFor(owed(session(pending), told, options).parts.at(-1)!.actions);
const context = (pending?: Pending): PhoneContext => ({
  current: { name: 'abc-7f3a', phase: pending ? 'AwaitingApproval' : 'Working', pending },
  queued: 0,
});

describe('payloads', () => {
  it('round-trips what the relay writes', () => {
    const [allow, always] = bindReplies('tool-0001', [
      { label: 'allow', reply: 'allow' },
      { label: 'allow always', reply: 'allow always' },
    ]);
    expect(allow!.payload).toBe('allow:tool-0001');
    expect(parsePayload(allow!.payload)).toEqual({ reply: 'allow', requestId: 'tool-0001' });
    expect(parsePayload(always!.payload)).toEqual({ reply: 'allow always', requestId: 'tool-0001' });
    expect(parsePayload('2:question-0001')).toEqual({ reply: '2', requestId: 'question-0001' });
  });

  it.each([
    ['empty', ''],
    ['no request', 'allow'],
    ['no reply', ':tool-0001'],
    ['empty request', 'allow:'],
    ['upper case', 'ALLOW:tool-0001'],
    ['three words', 'allow it now:tool-0001'],
    ['a second colon', 'allow:tool:0001'],
    ['a newline', 'allow:tool-0001\nstatus'],
    ['markup', '<script>alert(1)</script>:x'],
    ['json', '{"reply":"allow"}'],
    ['a space in the id', 'allow:tool 0001'],
    ['unicode', 'allоw:tool-0001'],
    ['a path', 'allow:../../etc/passwd'],
    ['oversize', `allow:${'a'.repeat(PAYLOAD_CHARS)}`],
    ['a long reply', `${'a'.repeat(30)}:tool-0001`],
  ])('refuses %s', (_what, payload) => {
    expect(parsePayload(payload)).toBeUndefined();
  });

  it('refuses what is not a string', () => {
    for (const value of [undefined, null, 42, ['allow:tool-0001'], { reply: 'allow' }])
      expect(parsePayload(value)).toBeUndefined();
  });
});

describe('which requests get buttons', () => {
  it('a tool request: allow, allow always, deny — each naming the request', () => {
    expect(shownButtons(tool())).toEqual([
      { title: 'allow', id: 'allow:tool-0001' },
      { title: 'allow always', id: 'allow always:tool-0001' },
      { title: 'deny', id: 'deny:tool-0001' },
    ]);
  });

  it('changes and plans: approve and reject', () => {
    expect(shownButtons(changes())?.map((b) => b.id)).toEqual(['approve:changes-0001', 'reject:changes-0001']);
  });

  it('a question with two options: both and reject; with three or more: the numbered text alone', () => {
    expect(shownButtons(question(['Redis', 'In-memory']))).toEqual([
      { title: '1. Redis', id: '1:question-0001' },
      { title: '2. In-memory', id: '2:question-0001' },
      { title: 'reject', id: 'reject:question-0001' },
    ]);
    expect(shownButtons(question(['Redis', 'In-memory', 'Postgres']))).toBeUndefined();
    const text = owed(session(question(['Redis', 'In-memory', 'Postgres'])), told, options).parts.at(-1)!.text!;
    expect(text).toMatch(/1\. Redis\n2\. In-memory\n3\. Postgres/);
  });

  it('cuts titles to 20 characters; a reply without a payload means no buttons', () => {
    expect(buttonTitle('1. A very long option label indeed')).toBe('1. A very long opti…');
    expect(buttonTitle('1. A very long opti…').length).toBe(20);
    expect(buttonsFor([{ label: 'allow', reply: 'allow' }])).toBeUndefined();
    expect(buttonsFor([])).toBeUndefined();
  });
});

describe('a tap', () => {
  it('answers the open request it names, as the typed words would', () => {
    expect(routeTap('allow always:tool-0001', context(tool()), 3)).toEqual({
      kind: 'decide',
      session: 'abc-7f3a',
      decision: { requestId: 'tool-0001', action: 'allow', scope: 'session' },
    });
    expect(routeTap('2:question-0001', context(question(['Redis', 'In-memory'])), 3)).toMatchObject({
      kind: 'decide',
      decision: { action: 'answer', answers: { 'Which database?': 'In-memory' } },
    });
  });

  it("on an old message, another phone's request, or with nothing open: refused", () => {
    expect(routeTap('allow:tool-0001', context(tool('tool-0002')), 3)).toEqual({ kind: 'stale' });
    expect(routeTap('allow:tool-9999', context(tool()), 3)).toEqual({ kind: 'stale' });
    expect(routeTap('approve:changes-0001', context(), 3)).toEqual({ kind: 'stale' });
    expect(routeTap('approve:changes-0001', { queued: 0 }, 3)).toEqual({ kind: 'stale' });
  });

  it(`with a reply that does not decide that request (a \
number out of range, a keyword of another kind): refused`, () => {
    expect(routeTap('approve:question-0001', context(question(['Redis', 'In-memory'])), 3)).toEqual({ kind: 'stale' });
    expect(routeTap('9:question-0001', context(question(['Redis', 'In-memory'])), 3)).toEqual({ kind: 'stale' });
    expect(routeTap('status:tool-0001', context(tool()), 3)).toEqual({ kind: 'stale' });
  });

  it('with a payload the relay never wrote: refused as unknown', () => {
    expect(routeTap('<b>:x', context(tool()), 3)).toEqual({ kind: 'badTap' });
  });
});

describe('the repeated choice', () => {
  const decided = (fields: Partial<Decision>, requestId = 'tool-0001'): Decision => ({
    requestId,
    action: 'allow',
    at,
    ...fields,
  });
  const asked = { id: 'tool-0001', tool: 'Bash' };

  it('says what was chosen in a few words', () => {
    expect(echoText(decided({ scope: 'once' }), asked)).toBe('Allowed Bash once.');
    expect(echoText(decided({ scope: 'session' }), asked)).toBe('Allowed Bash for the rest of this session.');
    expect(echoText(decided({ action: 'deny', message: 'not on my laptop' }), asked)).toBe('Denied: not on my laptop');
    expect(echoText(decided({ action: 'deny' }), undefined)).toBe('Denied.');
    const options = { id: 'q-1', options: ['Redis', 'Postgres'] };
    expect(echoText(decided({ action: 'answer', answers: { 'Which?': 'Postgres' } }, 'q-1'), options)).toBe(
      'You chose 2 (Postgres).',
    );
    expect(
      echoText(decided({ action: 'answer', answers: { 'Which?': 'SQLite' }, message: 'SQLite' }, 'q-1'), options),
    ).toBe('You answered: SQLite');
    expect(echoText(decided({ action: 'approve' }), asked)).toBeUndefined();
  });

  it('names the number of a chosen option longer than the record keeps', () => {
    const long = `Postgres with ${'read replicas '.repeat(10)}`.trim();
    const options = askedOf({
      id: 'q-2',
      kind: 'question',
      createdAt: at,
      questions: [{ question: 'Which?', options: [{ label: 'Redis' }, { label: long }] }],
    });
    expect(echoText(decided({ action: 'answer', answers: { 'Which?': long } }, 'q-2'), options)).toMatch(
      /^You chose 2 \(Postgres with read replicas/,
    );
  });

  it('rides on the next message, once', () => {
    const s = session(undefined, [decided({ scope: 'once' })]);
    const state: Delivered = { ...told, asked };
    const first = withEcho(s, state, [{ text: '⏳ ran it' }], Date.now());
    expect(first).toEqual({ parts: [{ text: 'Allowed Bash once.\n⏳ ran it' }], echoed: 'tool-0001' });
    expect(withEcho(s, { ...state, echoed: 'tool-0001' }, [{ text: '⏳ more' }], Date.now()).parts).toEqual([
      { text: '⏳ more' },
    ]);
  });

  it('goes alone when nothing follows within the wait', () => {
    const s = session(undefined, [decided({ scope: 'once' })]);
    const decidedAt = new Date(at).getTime();
    expect(withEcho(s, { ...told, asked }, [], decidedAt + 1000)).toEqual({
      parts: [],
      wakeAt: decidedAt + ECHO_WAIT_MS,
    });
    expect(withEcho(s, { ...told, asked }, [], decidedAt + ECHO_WAIT_MS)).toEqual({
      parts: [{ text: 'Allowed Bash once.' }],
      echoed: 'tool-0001',
    });
  });

  describe('waits for a message already on its way instead of going alone', () => {
    const decidedAt = new Date(at).getTime();
    const cadence = { ...options, progressBatchMs: 15_000 };
    const working = (status: Partial<NonNullable<Session['status']>>) => {
      const s = session(undefined, [decided({ scope: 'once' })]);
      return { ...s, status: { ...s.status!, ...status } };
    };

    it('progress the cadence holds back: the echo goes with it when it is due', () => {
      const s = working({ progress: [{ seq: 2, at, text: 'Running npm test' }] });
      const state: Delivered = {
        ...told,
        asked,
        pending: 'tool-0001',
        seq: 1,
        progressSent: 1,
        progressAt: decidedAt - 1000,
      };
      const dueAt = decidedAt - 1000 + 15_000;
      const waiting = nextMessages(s, state, { ...cadence, now: decidedAt + ECHO_WAIT_MS });
      expect(waiting.parts).toEqual([]);
      expect(waiting.wakeAt).toBe(dueAt);
      const sent = nextMessages(s, state, { ...cadence, now: dueAt });
      expect(sent.parts).toEqual([{ text: 'Allowed Bash once.\n⏳ Running npm test' }]);
      expect(sent.next).toMatchObject({ echoed: 'tool-0001', seq: 2 });
    });

    it('the agent has finished and the runner is drawing the review: the echo goes with the review', () => {
      const s = working({ result: { exitCode: 0, summary: 'done' } });
      const state: Delivered = { ...told, asked, pending: 'tool-0001' };
      const waiting = nextMessages(s, state, { ...cadence, now: decidedAt + ECHO_WAIT_MS });
      expect(waiting.parts).toEqual([]);
      expect(waiting.wakeAt).toBe(decidedAt + ECHO_LONGEST_WAIT_MS);
      const review = nextMessages(
        { ...s, status: { ...s.status!, phase: 'AwaitingApproval', pending: changes() } },
        state,
        { ...cadence, now: decidedAt + ECHO_WAIT_MS + 2000 },
      );
      expect(review.parts[0]!.text).toMatch(/^Allowed Bash once\.\nReady for review/);
    });

    it('but not longer than the longest wait', () => {
      const s = working({ result: { exitCode: 0 } });
      expect(
        nextMessages(s, { ...told, asked, pending: 'tool-0001' }, { ...cadence, now: decidedAt + ECHO_LONGEST_WAIT_MS })
          .parts,
      ).toEqual([{ text: 'Allowed Bash once.' }]);
    });
  });

  it('is prefixed to the next request shown, which is remembered in its place', () => {
    const s = session(changes(), [decided({ scope: 'once' })]);
    const result = nextMessages(s, { ...told, asked, pending: 'tool-0001' }, options);
    expect(result.parts[0]!.text).toMatch(/^Allowed Bash once\.\nReady for review/);
    expect(result.next).toMatchObject({ n: 2, echoed: 'tool-0001', asked: { id: 'changes-0001' } });
  });

  it('alone, still counts as a change to record', () => {
    const s = session(undefined, [decided({ scope: 'once' })]);
    const result = nextMessages(
      s,
      { ...told, asked, pending: 'tool-0001' },
      { ...options, now: new Date(at).getTime() + ECHO_WAIT_MS },
    );
    expect(result.parts).toEqual([{ text: 'Allowed Bash once.' }]);
    expect(result.next).toMatchObject({ n: 2, echoed: 'tool-0001' });
  });
});

describe('the webhook of a tapped button', () => {
  const settings = {
    authToken: 'a'.repeat(32),
    webhookUrl: 'https://relay.example/webhook',
    allowedNumbers: new Set(['+14155550123']),
  };
  const check = (payload: string) => {
    const hook = tapWebhook(settings.authToken, settings.webhookUrl, {
      from: '+14155550123',
      title: 'allow',
      payload,
      repliedTo: `SM${'1'.repeat(32)}`,
    });
    return checkWebhook({ signature: hook.headers['x-twilio-signature'], search: '', params: hook.params }, settings);
  };

  it('carries ButtonPayload to the handler, the title as the body', () => {
    expect(check('allow:tool-0001')).toMatchObject({
      kind: 'accepted',
      message: { body: 'allow', payload: 'allow:tool-0001' },
    });
  });

  it('keeps no more of a hostile payload than a valid one can hold (it is refused when routed)', () => {
    const verdict = check('x'.repeat(10_000));
    expect(verdict.kind === 'accepted' && verdict.message.payload!.length).toBe(PAYLOAD_CHARS + 1);
    expect(routeTap((verdict as { message: { payload: string } }).message.payload, context(tool()), 3)).toEqual({
      kind: 'badTap',
    });
  });
});
