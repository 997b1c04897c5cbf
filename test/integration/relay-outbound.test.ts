// Outbound on the real API server: the test plays controller and runner by patching Session
// status; the relay (real informer, Twilio SDK → fake Messages API) tells the phone. Restarts lose
// and repeat nothing. Media: runner upload checked by TokenReview, fetched by signed URL.
import { AuthenticationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { LABEL_PHONE_HASH } from '../../common/session/names.ts';
import type { Session, SessionStatus } from '../../common/session/schema.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { deleteNamespace, runnerRelayToken, sessionNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { PUBLIC_URL, relaySettled, startTestRelay, type TestRelay } from '../support/relay.ts';
import { postWebhook, signedWebhook } from '../support/twilio-webhook.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const phone = '+14155550201';
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 7)]);
let kc: KubeConfig;
let ns: string;
let fake: FakeTwilio;
let sessions: SessionClient;
let relay: TestRelay | undefined;
let mediaDir: string | undefined;

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('relay-out'));
  fake = await startFakeTwilio();
});
afterAll(async () => {
  await relay?.close();
  await fake?.close();
  await deleteNamespace(kc, ns);
});

async function restart(): Promise<TestRelay> {
  await relay?.close();
  relay = await startTestRelay({ kubeConfig: kc, namespace: ns, twilio: fake, allowed: [phone], mediaDir });
  mediaDir = relay.config.media.dir;
  return relay;
}
const bodies = () => fake.to(phone).map((m) => m.body);
const progress = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ seq: i + 1, at: new Date().toISOString(), text: `step ${i + 1}` }));
const set = (name: string, status: Partial<SessionStatus>) => sessions.patchStatus(ns, name, status);

describe('relay outbound on a real API server', () => {
  let name: string;
  const settle = () => relaySettled(relay!, sessions, ns, name);

  it('acknowledges a command and batches progress', async () => {
    const r = await restart();
    const hook = signedWebhook(fake.authToken, `${PUBLIC_URL}/webhook`, {
      from: phone,
      body: 'make the navbar sticky',
    });
    expect((await postWebhook(`${r.url}/webhook`, hook)).status).toBe(200);
    const [session] = await eventually(async () => {
      const list = (await sessions.list(ns, `${LABEL_PHONE_HASH}=${testPhoneHash(phone)}`)).items;
      expect(list).toHaveLength(1);
      return list as [Session];
    });
    name = session.metadata.name!;
    await set(name, { phase: 'Starting' });
    await set(name, { phase: 'Working', progress: progress(1) });
    await fake.waitFor(phone, 2);
    await set(name, { progress: progress(2) });
    await set(name, { progress: progress(3) });
    await fake.waitFor(phone, 3);
    await settle();
    expect(bodies()).toEqual([
      `On it (session ${name.slice(-4)}). Reply *cancel* to stop.`,
      '⏳ step 1',
      '⏳ step 2\n⏳ step 3',
    ]);
    expect(fake.to(phone)[2]!.at - fake.to(phone)[1]!.at).toBeGreaterThanOrEqual(250);
  });

  it('after a restart sends what happened while it was down, once', async () => {
    await relay!.close();
    relay = undefined;
    await set(name, { progress: progress(5) });
    await set(name, {
      phase: 'AwaitingApproval',
      pending: {
        id: 't1',
        kind: 'tool',
        tool: 'Bash',
        input: '{"command":"npm test"}',
        createdAt: new Date().toISOString(),
      },
    });
    await restart();
    await fake.waitFor(phone, 4);
    await settle();
    await restart();
    await settle();
    // The progress the prompt flushed rides in its message.
    expect(bodies().slice(3)).toEqual([
      '⏳ step 4\n⏳ step 5\n🔐 The agent wants to run: `npm test`\nReply *allow*, *allow always* (for this session) ' +
        'or *deny <reason>*.',
    ]);
    const delivered = JSON.parse((await sessions.get(ns, name))!.metadata.annotations!['tether.dev/delivered']!);
    expect(delivered).toMatchObject({ seq: 5, pending: 't1', started: true });
  });

  it('shows the diff image uploaded by the runner (TokenReview), then the instructions, then the result', async () => {
    const token = await runnerRelayToken(kc, ns, name, phone);
    const upload = (path: string, auth: string) =>
      fetch(`${relay!.url}/uploads/${path}`, {
        method: 'PUT',
        body: PNG,
        headers: { 'content-type': 'image/png', authorization: `Bearer ${auth}` },
      });
    expect((await upload(`${ns}/${name}/diff.png`, token)).status).toBe(201);
    expect((await upload(`${ns}/other-session/diff.png`, token)).status).toBe(403);
    const sameAccountOtherPod = await runnerRelayToken(kc, ns, 'other-session-of-the-phone', phone);
    expect(
      (await upload(`${ns}/${name}/diff.png`, sameAccountOtherPod)).status,
      "a token bound to another Session's Pod",
    ).toBe(403);
    expect((await upload(`${ns}/${name}/x.png`, 'not-a-token')).status).toBe(403);
    const admin = await kc.makeApiClient(AuthenticationV1Api).createTokenReview({ body: { spec: { token } } });
    expect(admin.status?.authenticated).not.toBe(true); // the token is only good for the relay's audience

    await set(name, { phase: 'Working', pending: null as never });
    await set(name, {
      phase: 'AwaitingApproval',
      pending: { id: 'c1', kind: 'changes', summary: '1 file changed, +2 −1', createdAt: new Date().toISOString() },
      result: {
        diffStat: ' src/Navbar.tsx | 3 ++-',
        media: [{ kind: 'diff', ref: `${ns}/${name}/diff.png`, contentType: 'image/png' }],
      },
    });
    const sent = await fake.waitFor(phone, 6);
    expect(sent[4]!.mediaUrls).toHaveLength(1);
    expect(sent[4]!.body).toBe('Ready for review — 1 file changed, +2 −1:\n  src/Navbar.tsx | 3 ++-');
    expect(sent[5]!.body).toContain('Reply *approve* to open a pull request');
    const image = await fetch(sent[4]!.mediaUrls[0]!.replace(PUBLIC_URL, relay!.url));
    expect(image.status).toBe(200);
    expect(Buffer.from(await image.arrayBuffer()).equals(PNG)).toBe(true);

    await set(name, { phase: 'Publishing', pending: null as never });
    await set(name, { phase: 'Succeeded', result: { prUrl: 'https://github.com/acme/web/pull/7', costUsd: 0.12 } });
    await fake.waitFor(phone, 7);
    await settle();
    expect(bodies()[6]).toBe('✅ Pull request opened: https://github.com/acme/web/pull/7\n$0.12');
    await restart();
    await settle();
    expect(fake.to(phone)).toHaveLength(7);
  });
});
