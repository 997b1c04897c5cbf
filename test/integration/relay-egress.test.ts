// An egress request through a real relay on the real API server: the test plays the runner by writing
// status.pending {kind: egress}; the phone (the Twilio fake, buttons on) gets the message with three
// buttons; a tap or typed words write the decision with its scope; an old tap answers nothing later.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { LABEL_PHONE_HASH } from '../../common/session/names.ts';
import type { Pending } from '../../common/session/schema.ts';
import { startFakeTwilio, type FakeMessage, type FakeTwilio } from '../fakes/twilio.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { testPhoneHash } from '../support/phone-hash.ts';
import { PUBLIC_URL, startTestRelay, type TestRelay } from '../support/relay.ts';
import { postWebhook, signedWebhook, tapWebhook } from '../support/twilio-webhook.ts';

const phones = { tap: '+14155550301', session: '+14155550302', deny: '+14155550303' };
const REPLIES =
  'Reply *allow* (this connection only), *allow session* (for this session), ' +
  '*allow always* (for this repository, later commands too) or *deny <reason>*.';
let kc: KubeConfig;
let ns: string;
let fake: FakeTwilio;
let sessions: SessionClient;
let relay: TestRelay;

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('relay-egress'));
  fake = await startFakeTwilio();
  relay = await startTestRelay({ kubeConfig: kc, namespace: ns, twilio: fake, allowed: Object.values(phones) });
});
afterAll(async () => {
  await relay?.close();
  await fake?.close();
  await deleteNamespace(kc, ns);
});

const post = async (hook: ReturnType<typeof signedWebhook>) =>
  expect((await postWebhook(`${relay.url}/webhook`, hook)).status).toBe(200);
const send = (from: string, body: string) =>
  post(signedWebhook(fake.authToken, `${PUBLIC_URL}/webhook`, { from, body }));
const tap = (from: string, message: FakeMessage, title: string) => {
  const button = message.buttons!.find((b) => b.title === title)!;
  return post(
    tapWebhook(fake.authToken, `${PUBLIC_URL}/webhook`, { from, title, payload: button.id, repliedTo: message.sid }),
  );
};
/** The first message to the phone whose text matches, once it came. */
const message = (phone: string, pattern: RegExp) =>
  eventually(() => {
    const found = fake.to(phone).find((m) => pattern.test(m.body));
    expect(found, `${pattern} among ${JSON.stringify(fake.to(phone).map((m) => m.body))}`).toBeDefined();
    return found!;
  });
const decisions = async (name: string, count: number) =>
  eventually(async () => {
    const written = (await sessions.get(ns, name))!.spec.decisions ?? [];
    expect(written).toHaveLength(count);
    return written;
  });

/** A command from the phone, its Session working, then the runner's request `pending`. */
async function asked(phone: string, pending: Omit<Pending, 'createdAt'>): Promise<string> {
  await send(phone, 'add the requests library');
  const name = await eventually(async () => {
    const list = (await sessions.list(ns, `${LABEL_PHONE_HASH}=${testPhoneHash(phone)}`)).items;
    expect(list).toHaveLength(1);
    return list[0]!.metadata.name!;
  });
  await sessions.patchStatus(ns, name, { phase: 'Working' });
  await ask(name, pending);
  return name;
}
const ask = (name: string, pending: Omit<Pending, 'createdAt'>) =>
  sessions.patchStatus(ns, name, {
    phase: 'AwaitingApproval',
    pending: { ...pending, createdAt: new Date().toISOString() },
  });
const egress = (id: string) => ({
  id,
  kind: 'egress' as const,
  host: 'pypi.org',
  port: 443,
  tool: 'Bash',
  input: '{"command":"pip install foo"}',
});

describe('an egress request on the phone, on a real API server', () => {
  it(`shows the host with three buttons; "Always for repo" writes scope repository; the \
old buttons answer no later tool request, whose "allow always" still means the session`, async () => {
    const name = await asked(phones.tap, egress('egress-1'));
    const shown = await message(phones.tap, /^🌐/);
    expect(shown.body).toBe(
      `🌐 The agent wants to reach pypi.org (for \`pip install foo\`).\n${REPLIES} (expires in 30 min)`,
    );
    expect(shown.buttons).toEqual([
      { title: 'Allow once', id: 'allow:egress-1' },
      { title: 'Always for repo', id: 'allow always:egress-1' },
      { title: 'Deny', id: 'deny:egress-1' },
    ]);
    await tap(phones.tap, shown, 'Always for repo');
    expect(await decisions(name, 1)).toEqual([
      expect.objectContaining({
        requestId: 'egress-1',
        action: 'allow',
        scope: 'repository',
        by: 'twilio:+1415•••0301',
      }),
    ]);

    await sessions.patchStatus(ns, name, { phase: 'Working' });
    await ask(name, { id: 'tool-2', kind: 'tool', tool: 'Bash', input: '{"command":"npm test"}' });
    const tool = await message(phones.tap, /🔐 The agent wants to run: `npm test`/);
    expect(tool.body).toMatch(/^Allowed pypi\.org for this repository, later commands too\.\n🔐/);
    await tap(phones.tap, shown, 'Allow once');
    await message(phones.tap, /^That request is no longer open/);
    await tap(phones.tap, shown, 'Deny');
    await eventually(() => expect(fake.to(phones.tap).filter((m) => /no longer open/.test(m.body))).toHaveLength(2));
    expect(await decisions(name, 1)).toHaveLength(1);
    await send(phones.tap, 'allow always');
    expect((await decisions(name, 2))[1]).toMatchObject({ requestId: 'tool-2', action: 'allow', scope: 'session' });
  });

  it('typed "allow session" writes scope session', async () => {
    const name = await asked(phones.session, { ...egress('egress-s'), host: 'files.example.org', port: 8443 });
    await message(phones.session, /^🌐 The agent wants to reach files\.example\.org:8443 \(for `pip install foo`\)/);
    await send(phones.session, 'allow session');
    expect(await decisions(name, 1)).toEqual([
      expect.objectContaining({ requestId: 'egress-s', action: 'allow', scope: 'session' }),
    ]);
  });

  it('typed "deny too risky" writes a deny with the reason', async () => {
    const name = await asked(phones.deny, egress('egress-d'));
    await message(phones.deny, /^🌐/);
    await send(phones.deny, 'deny too risky');
    const [denied] = await decisions(name, 1);
    expect(denied).toMatchObject({ requestId: 'egress-d', action: 'deny', message: 'too risky' });
    expect(denied!.scope).toBeUndefined();
  });
});
