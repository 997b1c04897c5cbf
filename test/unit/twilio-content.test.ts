// Buttons through the official SDK against the fake Twilio's Content API: the relay's templates
// are made once and found again by name, a message renders as the phone shows it, and the fake
// refuses what Twilio documents as invalid.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../relay/metrics.ts';
import { bindReplies } from '../../relay/chat/buttons.ts';
import { Outbox } from '../../relay/outbound/outbox.ts';
import { createTwilioTransport } from '../../relay/transports/twilio.ts';
import { decisionName, quickReplyDefinition, quickReplyName } from '../../relay/transports/twilio-content.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const logger = pino({ level: 'silent' });
let fake: FakeTwilio;
beforeAll(async () => {
  fake = await startFakeTwilio();
});
afterAll(async () => fake?.close());

const transport = (buttons = true) =>
  createTwilioTransport({
    accountSid: fake.accountSid,
    authToken: fake.authToken,
    from: 'whatsapp:+14155238886',
    apiUrl: fake.url,
    buttons,
    logger,
  });
const createContent = (definition: object) =>
  fetch(`${fake.url}/v1/Content`, {
    method: 'POST',
    body: JSON.stringify(definition),
    headers: {
      authorization: `Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`,
      'content-type': 'application/json',
    },
  });
const actions = (...replies: string[]) => replies.map((r) => ({ label: r, reply: r, payload: `${r}:tool-0001` }));

describe('WhatsApp buttons through the Content API', () => {
  it('sends a request with buttons; the phone sees the body and each button with its payload', async () => {
    await transport().send({
      to: '+14155550123',
      body: '🔐 The agent wants to run: `npm test`',
      actions: actions('allow', 'allow always', 'deny'),
    });
    const [sent] = fake.to('+14155550123');
    expect(sent!.body).toBe('🔐 The agent wants to run: `npm test`');
    expect(sent!.buttons).toEqual([
      { title: 'allow', id: 'allow:tool-0001' },
      { title: 'allow always', id: 'allow always:tool-0001' },
      { title: 'deny', id: 'deny:tool-0001' },
    ]);
    expect(sent!.contentSid).toBe(fake.contents.find((c) => c.friendly_name === quickReplyName(3))!.sid);
  });

  it('makes each template once, and a restarted relay finds it by name instead of making another', async () => {
    const before = fake.contents.length;
    await transport().send({ to: '+14155550124', body: 'Ready for review', actions: actions('approve', 'reject') });
    await transport().send({ to: '+14155550124', body: 'Ready again', actions: actions('approve', 'reject') });
    const again = transport();
    await again.send({ to: '+14155550124', body: 'And again', actions: actions('approve', 'reject') });
    await again.send({ to: '+14155550124', body: 'Once more', actions: actions('approve', 'reject') });
    expect(fake.contents.length).toBe(before + 1);
    expect(fake.contents.filter((c) => c.friendly_name === quickReplyName(2))).toHaveLength(1);
    expect(fake.to('+14155550124').map((m) => m.buttons?.length)).toEqual([2, 2, 2, 2]);
  });

  it('sends plain text when there are no bound replies, too many, or buttons are off', async () => {
    await transport().send({ to: '+14155550125', body: 'Pick one: 1 2 3 4', actions: actions('1', '2', '3', '4') });
    await transport().send({ to: '+14155550125', body: 'typed only', actions: [{ label: 'allow', reply: 'allow' }] });
    await transport(false).send({ to: '+14155550125', body: 'buttons off', actions: actions('allow', 'deny') });
    expect(fake.to('+14155550125').map((m) => [m.body, m.buttons, m.contentSid])).toEqual([
      ['Pick one: 1 2 3 4', undefined, undefined],
      ['typed only', undefined, undefined],
      ['buttons off', undefined, undefined],
    ]);
  });
});

describe('outside the 24-hour window', () => {
  const outbox = (templateSid: string) => {
    const t = transport();
    return new Outbox({
      phoneHash: testPhoneHash,
      transportFor: () => t,
      mediaUrl: (ref) => ref,
      lastInboundAt: () => Date.now() - 25 * 3_600_000,
      templateSid,
      windowMs: 23.5 * 3_600_000,
      ratePerSecond: 100,
      metrics: createMetrics(),
      logger,
    });
  };
  const toolRequest = (id: string) => [
    {
      text: '🔐 The agent wants to run: `npm test`',
      actions: bindReplies(
        id,
        ['allow', 'allow always', 'deny'].map((r) => ({ label: r, reply: r })),
      ),
    },
  ];

  it(`a request goes out as the approved decision template with its buttons; until WhatsApp approves it, as the plain \
template`, async () => {
    const plain = (await (
      await createContent({
        language: 'en',
        variables: { 1: 'x' },
        types: { 'twilio/text': { body: 'Tether update: {{1}} (reply to continue)' } },
      })
    ).json()) as { sid: string };
    const phone = '+14155550127';
    await outbox(plain.sid).deliver(phone, toolRequest('tool-0007'));
    const decision = fake.contents.find((c) => c.friendly_name === decisionName(['allow', 'allow always', 'deny']))!;
    const [first] = fake.to(phone);
    expect(first!.contentSid).toBe(plain.sid);
    expect(first!.body).toMatch(/^Tether update: 🔐 The agent wants to run/);

    fake.decideApproval(decision.sid, 'approved');
    await outbox(plain.sid).deliver(phone, toolRequest('tool-0008'));
    const second = fake.to(phone)[1]!;
    expect(second.contentSid).toBe(decision.sid);
    expect(second.body).toBe(
      'Tether is waiting for your decision: 🔐 The agent wants to run: `npm test`\nTap a button, or reply in words.',
    );
    expect(second.buttons).toEqual([
      { title: 'allow', id: 'allow:tool-0008' },
      { title: 'allow always', id: 'allow always:tool-0008' },
      { title: 'deny', id: 'deny:tool-0008' },
    ]);
    expect(fake.contents.filter((c) => c.friendly_name === decision.friendly_name)).toHaveLength(1);

    // A question's options are not fixed words: no approved template can hold them.
    await outbox(plain.sid).deliver(phone, [
      {
        text: '❓ Which?',
        actions: bindReplies('q-1', [
          { label: '1. Redis', reply: '1' },
          { label: 'reject', reply: 'reject' },
        ]),
      },
    ]);
    expect(fake.to(phone)[2]!.contentSid).toBe(plain.sid);
  });
});

describe('the fake Content API refuses what Twilio does', () => {
  it('at creation: missing language, unknown variables, too many actions, long titles, duplicate titles', async () => {
    const qr = (actionsList: object[], extra: object = {}) => ({
      language: 'en',
      types: { 'twilio/quick-reply': { body: 'Pick', actions: actionsList } },
      ...extra,
    });
    const refused = [
      { types: { 'twilio/text': { body: 'x' } } },
      { language: 'en', types: { 'twilio/text': { body: 'Hi {{1}}!' } } },
      qr(Array.from({ length: 11 }, (_, i) => ({ title: `b${i}`, id: `${i}` }))),
      qr([{ title: 'a title over twenty chars', id: '1' }]),
      qr([
        { title: 'same', id: '1' },
        { title: 'same', id: '2' },
      ]),
      qr([{ title: 'ok', id: 'x'.repeat(201) }]),
    ];
    for (const body of refused) expect((await createContent(body)).status, JSON.stringify(body)).toBe(400);
    expect((await createContent(quickReplyDefinition(3))).status).toBe(201);
  });

  it(`at sending: more than 3 buttons in session, variables \
not all supplied, a title too long once filled in`, async () => {
    const four = (await (
      await createContent({
        language: 'en',
        types: {
          'twilio/quick-reply': { body: 'Pick', actions: ['a', 'b', 'c', 'd'].map((t) => ({ title: t, id: t })) },
        },
      })
    ).json()) as { sid: string };
    const three = fake.contents.find((c) => c.friendly_name === quickReplyName(3))!.sid;
    const full = { 1: 'body', 2: 'a', 3: 'a:x', 4: 'b', 5: 'b:x', 6: 'c', 7: 'c:x' };
    const cases: Array<[string, object]> = [
      [four.sid, {}],
      [three, { ...full, 7: undefined }],
      [three, { ...full, 2: 'a title over twenty chars' }],
      [`HX${'0'.repeat(32)}`, full],
    ];
    const before = fake.messages.length;
    for (const [sid, variables] of cases) {
      await expect(
        transport().send({
          to: '+14155550126',
          template: { contentSid: sid, variables: variables as Record<string, string> },
        }),
      ).rejects.toThrow(/Twilio send failed/);
    }
    expect(fake.messages.length).toBe(before);
  });

  it(`WhatsApp approval: a body starting or ending with a \
variable is rejected at once; others wait for the verdict`, async () => {
    const auth = {
      authorization: `Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`,
      'content-type': 'application/json',
    };
    const submit = async (body: string) => {
      const { sid } = (await (
        await createContent({ language: 'en', variables: { 1: 'x' }, types: { 'twilio/text': { body } } })
      ).json()) as { sid: string };
      await fetch(`${fake.url}/v1/Content/${sid}/ApprovalRequests/whatsapp`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ name: 'some_name', category: 'UTILITY' }),
      });
      return (
        (await (await fetch(`${fake.url}/v1/Content/${sid}/ApprovalRequests`, { headers: auth })).json()) as {
          whatsapp: { status: string };
        }
      ).whatsapp.status;
    };
    expect(await submit('{{1}} is ready')).toBe('rejected');
    expect(await submit('Ready: {{1}}')).toBe('rejected');
    expect(await submit('Ready: {{1}} now')).toBe('received');
  });

  it('lists in pages the SDK follows', async () => {
    for (let i = 0; i < 3; i++)
      expect(
        (await createContent({ friendly_name: `page_${i}`, language: 'en', types: { 'twilio/text': { body: 'x' } } }))
          .status,
      ).toBe(201);
    const auth = { authorization: `Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}` };
    const first = (await (await fetch(`${fake.url}/v1/Content?PageSize=2`, { headers: auth })).json()) as {
      contents: unknown[];
      meta: { next_page_url: string; key: string };
    };
    expect(first.contents).toHaveLength(2);
    expect(first.meta.key).toBe('contents');
    expect(first.meta.next_page_url).toMatch(/^https:\/\/content\.twilio\.com\/v1\/Content\?PageSize=2&PageToken=2$/);
    expect((await fetch(`${fake.url}/v1/Content`, { headers: {} })).status).toBe(401);
  });
});
