// End to end outside WhatsApp's 24-hour window (RELAY_WINDOW so short that it is always closed):
// updates go out as the operator's template; a request as the relay's decision template once
// WhatsApp has approved it (one made by an earlier run, found by name), whose buttons still name
// the request they answer; a request whose template is not approved yet, as the operator's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionDefinition, decisionName } from '../../relay/transports/twilio-content.ts';
import { startE2E, type E2E } from '../support/e2e.ts';

const TOOL_TITLES = ['allow', 'allow always', 'deny'];

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({
    numbers: ['+14155550161'],
    relayEnv: { RELAY_WINDOW: '1ms' },
    async prepareTwilio(twilio) {
      const headers = {
        authorization: `Basic ${Buffer.from(`${twilio.accountSid}:${twilio.authToken}`).toString('base64')}`,
        'content-type': 'application/json',
      };
      const create = async (definition: object) =>
        (
          (await (
            await fetch(`${twilio.url}/v1/Content`, { method: 'POST', headers, body: JSON.stringify(definition) })
          ).json()) as { sid: string }
        ).sid;
      const operator = await create({
        friendly_name: 'operator_update',
        language: 'en',
        variables: { 1: 'news' },
        types: { 'twilio/text': { body: 'Tether update: {{1}} (reply to continue)' } },
      });
      // What an earlier run made and submitted, and WhatsApp approved since.
      const decision = await create(decisionDefinition(TOOL_TITLES));
      const submitted = await fetch(`${twilio.url}/v1/Content/${decision}/ApprovalRequests/whatsapp`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: decisionName(TOOL_TITLES), category: 'UTILITY' }),
      });
      expect(submitted.status).toBe(201);
      twilio.decideApproval(decision, 'approved');
      return { TWILIO_TEMPLATE_SID: operator };
    },
  });
}, 90_000);
afterAll(async () => e2e?.stop());

describe('end to end: outside the 24-hour window', () => {
  it(`a tool request goes out as the approved decision template and a tap answers it; the review, not approved yet, as \
the plain template`, async () => {
    const phone = e2e.phone('+14155550161');
    await phone.send(
      'script:\ntool: Bash {"command":"echo ok > window.txt"}\nwrite: window.md = outside the window\nsay: ran it',
    );
    await phone.next(/^Tether update: On it/);
    const ask = await phone.next(/^Tether is waiting for your decision: .*🔐/s);
    expect(ask.buttons?.map((b) => b.title)).toEqual(TOOL_TITLES);
    expect(e2e.twilio.contents.filter((c) => c.friendly_name === decisionName(TOOL_TITLES))).toHaveLength(1);
    await phone.tap(ask, 'allow always');

    const review = await phone.next(/^Tether update: .*Ready for review/s);
    expect(review.buttons).toBeUndefined();
    // The choice rode on the next update (a progress line, or this review).
    expect(
      phone.received().filter((m) => /^Tether update: Allowed Bash for the rest of this session\./.test(m.body)),
    ).toHaveLength(1);
    const made = e2e.twilio.contents.find((c) => c.friendly_name === decisionName(['approve', 'reject']));
    expect(made, "the relay made the review's decision template and submitted it").toBeDefined();
    await phone.send('reject');
    await phone.next(/^Tether update: ↩️ Changes undone/);
    const [session] = await e2e.list();
    expect(session!.spec.decisions?.map((d) => [d.action, d.scope])).toEqual([
      ['allow', 'session'],
      ['reject', undefined],
    ]);
  });
});
