// Inbound through two real relay replicas on the real API server: signed webhooks → Sessions,
// decisions, queueing and cancel; duplicates of one MessageSid make exactly one Session.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { LABEL_PHONE_HASH } from '../../common/session/names.ts';
import { claimKey, ConfigMapClaims } from '../../relay/inbound/claims.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { PUBLIC_URL, startTestRelay, type TestRelay } from '../support/relay.ts';
import { messageSid, postWebhook, signedWebhook } from '../support/twilio-webhook.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const phones = { dup: '+14155550101', decide: '+14155550102', queue: '+14155550103', replay: '+14155550104' };
let kc: KubeConfig;
let ns: string;
let fake: FakeTwilio;
let sessions: SessionClient;
let a: TestRelay;
let b: TestRelay;

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('relay-in'));
  fake = await startFakeTwilio();
  const options = { kubeConfig: kc, namespace: ns, twilio: fake, allowed: Object.values(phones) };
  [a, b] = await Promise.all([startTestRelay(options), startTestRelay(options)]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await fake?.close();
  await deleteNamespace(kc, ns);
});

const send = (relay: TestRelay, from: string, body: string, sid = messageSid()) =>
  postWebhook(`${relay.url}/webhook`, signedWebhook(fake.authToken, `${PUBLIC_URL}/webhook`, { from, body, sid }));
const sessionsOf = async (phone: string) =>
  (await sessions.list(ns, `${LABEL_PHONE_HASH}=${testPhoneHash(phone)}`)).items.sort((x, y) =>
    x.metadata.name!.localeCompare(y.metadata.name!),
  );
const replies = (phone: string) => fake.to(phone).map((m) => m.body);
/** Waits until the phone has exactly one Session, and returns it. */
const onlySessionOf = (phone: string) =>
  eventually(async () => {
    const list = await sessionsOf(phone);
    expect(list).toHaveLength(1);
    return list[0]!;
  });

describe('relay inbound on a real API server', () => {
  it(`turns 1,000 concurrent copies of one webhook over \
two replicas into exactly one Session and one reply`, async () => {
    const sid = messageSid();
    const hook = signedWebhook(fake.authToken, `${PUBLIC_URL}/webhook`, {
      from: phones.dup,
      body: 'make the navbar sticky',
      sid,
    });
    const responses = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => postWebhook(`${(i % 2 ? a : b).url}/webhook`, hook)),
    );
    expect(responses.every((r) => r.status === 200)).toBe(true);
    await fake.waitFor(phones.dup, 1);
    // Acknowledged copies may still wait in either replica's intake: every one is acted on first.
    await Promise.all([a.intake.idle(), b.intake.idle()]);
    await Promise.all([a.lanes.idle(), b.lanes.idle()]);
    const created = await sessionsOf(phones.dup);
    expect(created).toHaveLength(1);
    expect(created[0]!.spec).toMatchObject({
      phone: phones.dup,
      prompt: 'make the navbar sticky',
      repo: { url: 'https://github.com/acme/web.git', baseBranch: 'main' },
    });
    expect(replies(phones.dup)).toEqual([
      `On it (session ${created[0]!.metadata.name!.slice(-4)}). Reply *cancel* to stop.`,
    ]);
    const dupes =
      (await a.metrics.duplicates.get()).values[0]!.value + (await b.metrics.duplicates.get()).values[0]!.value;
    expect(dupes).toBe(999);
  });

  it('appends decisions with who and when, once per request', async () => {
    await send(a, phones.decide, 'add a dark-mode toggle');
    const name = (await onlySessionOf(phones.decide)).metadata.name!;
    await sessions.patchStatus(ns, name, { phase: 'Working' });
    await sessions.patchStatus(ns, name, {
      phase: 'AwaitingApproval',
      pending: {
        id: 'tool-1',
        kind: 'tool',
        tool: 'Bash',
        input: '{"command":"npm install"}',
        createdAt: new Date().toISOString(),
      },
    });
    await fake.waitFor(phones.decide, 2);
    expect(replies(phones.decide)[1]).toContain('🔐 The agent wants to run: `npm install`');
    // Replica b answers from its own cache: wait until it has seen the request.
    await eventually(() => expect(b.phones.context(phones.decide).current?.pending?.id).toBe('tool-1'));
    await send(b, phones.decide, 'allow always');
    await eventually(async () => expect((await sessions.get(ns, name))!.spec.decisions).toHaveLength(1));
    const decisions = (await sessions.get(ns, name))!.spec.decisions!;
    expect(decisions[0]).toMatchObject({
      requestId: 'tool-1',
      action: 'allow',
      scope: 'session',
      by: 'twilio:+1415•••0102',
    });
    expect(Date.now() - new Date(decisions[0]!.at).getTime()).toBeLessThan(30_000);
    await send(a, phones.decide, 'deny');
    await eventually(() => expect(replies(phones.decide).at(-1)).toBe('That request was already answered.'));
    expect((await sessions.get(ns, name))!.spec.decisions).toHaveLength(1);
  });

  it('refuses a typed answer replayed later, on either replica, while its claim lives', async () => {
    await send(a, phones.replay, 'rename the header');
    const name = (await onlySessionOf(phones.replay)).metadata.name!;
    const ask = (id: string) =>
      sessions.patchStatus(ns, name, {
        phase: 'AwaitingApproval',
        pending: {
          id,
          kind: 'tool',
          tool: 'Bash',
          input: `{"command":"echo ${id}"}`,
          createdAt: new Date().toISOString(),
        },
      });
    await sessions.patchStatus(ns, name, { phase: 'Working' });
    await ask('first');
    await eventually(() =>
      expect([a, b].map((r) => r.phones.context(phones.replay).current?.pending?.id)).toEqual(['first', 'first']),
    );
    const allow = signedWebhook(fake.authToken, `${PUBLIC_URL}/webhook`, {
      from: phones.replay,
      body: 'allow',
      sid: messageSid(),
    });
    await postWebhook(`${a.url}/webhook`, allow);
    await eventually(async () => expect((await sessions.get(ns, name))!.spec.decisions).toHaveLength(1));
    await ask('second');
    await eventually(() =>
      expect([a, b].map((r) => r.phones.context(phones.replay).current?.pending?.id)).toEqual(['second', 'second']),
    );
    const sentBefore = fake.to(phones.replay).length;
    expect((await postWebhook(`${b.url}/webhook`, allow)).status).toBe(200);
    expect((await postWebhook(`${a.url}/webhook`, allow)).status).toBe(200);
    // A 200 means recorded: the intakes' idle() waits until both replays have been acted on.
    await Promise.all([a.intake.idle(), b.intake.idle()]);
    await Promise.all([a.lanes.idle(), b.lanes.idle()]);
    expect((await sessions.get(ns, name))!.spec.decisions!.map((d) => d.requestId)).toEqual(['first']);
    // Only the second request may still go out (it may carry the echo of the first answer); nothing answers the
    // replays.
    expect(
      fake
        .to(phones.replay)
        .slice(sentBefore)
        .map((m) => m.body)
        .filter((t) => !/^(Allowed Bash once\.\n)?🔐 .*echo second/.test(t)),
    ).toEqual([]);
  });

  it('queues while working, refuses the sixth queued command, and cancel stops them all', async () => {
    await send(a, phones.queue, 'task 1');
    const first = await onlySessionOf(phones.queue);
    await sessions.patchStatus(ns, first.metadata.name!, { phase: 'Starting' });
    await sessions.patchStatus(ns, first.metadata.name!, { phase: 'Working' });
    await fake.waitFor(phones.queue, 1);
    for (let i = 2; i <= 6; i++) {
      await send(i % 2 ? a : b, phones.queue, `task ${i}`);
      await fake.waitFor(phones.queue, i);
      await eventually(async () => expect(await sessionsOf(phones.queue)).toHaveLength(i));
      // Both replicas count the queue from their caches: wait until each has seen every Session.
      await eventually(() => expect([a, b].map((r) => r.phones.sessions(phones.queue).length)).toEqual([i, i]));
    }
    expect(replies(phones.queue).slice(1)).toEqual(
      [2, 3, 4, 5, 6].map(
        (n) => `Queued (#${n}). It starts when the current task finishes. *cancel* stops all of them.`,
      ),
    );
    await send(a, phones.queue, 'task 7');
    await fake.waitFor(phones.queue, 7);
    expect(replies(phones.queue)[6]).toBe(
      'You already have 5 commands waiting. Wait for one to finish, or reply *cancel* to clear them.',
    );
    expect(await sessionsOf(phones.queue)).toHaveLength(6);

    await send(b, phones.queue, 's');
    await fake.waitFor(phones.queue, 8);
    expect(replies(phones.queue)[7]).toMatch(
      new RegExp(
        `^Session ${first.metadata.name!.slice(-4)} · Working for \\d+ s · queue: 5\\nToday: \\$0\\.00 of \\$10\\.00$`,
      ),
    );
    await send(a, phones.queue, 'cancel');
    await fake.waitFor(phones.queue, 9);
    expect(replies(phones.queue)[8]).toBe(`Stopping session ${first.metadata.name!.slice(-4)} and 5 queued…`);
    expect((await sessionsOf(phones.queue)).map((s) => s.spec.cancel)).toEqual([true, true, true, true, true, true]);
  });

  it('keeps a claim for its retention on the injected clock, then another journal takes it; racers land', async () => {
    let now = Date.parse('2026-05-01T09:00:00Z');
    const retentionMs = 30 * 60_000;
    const claims = (owner: string) =>
      new ConfigMapClaims(connectionFromKubeConfig(kc), {
        name: 'claims-clock',
        namespace: ns,
        owner,
        retentionMs,
        now: () => now,
      });
    const [first, second] = [claims('journal-a'), claims('journal-b')];
    expect(await first.claim('m1')).toBe(true);
    expect(await second.claim('m1')).toBe(false);
    expect(await first.claim('m1')).toBe(true); // its own journal, after a restart
    now += retentionMs - 1;
    expect(await second.claim('m1')).toBe(false);
    now += 2;
    expect(await second.claim('m2')).toBe(true); // this write drops the expired entry of m1
    expect(await second.claim('m1')).toBe(true);
    const ids = Array.from({ length: 6 }, (_, i) => `race-${i}`);
    const taken = await Promise.all(ids.map((id, i) => (i % 2 ? first : second).claim(id)));
    expect(taken.every(Boolean)).toBe(true);
    const stored = await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: ns, name: 'claims-clock' });
    expect(Object.keys(stored.data ?? {}).sort()).toEqual(['m1', 'm2', ...ids].map(claimKey).sort());
  });

  it('creates nothing for an unknown number or a bad signature', async () => {
    const stranger = '+14155550199';
    expect((await send(a, stranger, 'hello')).status).toBe(200);
    const forged = signedWebhook('0'.repeat(32), `${PUBLIC_URL}/webhook`, { from: phones.dup, body: 'forged' });
    expect((await postWebhook(`${a.url}/webhook`, forged)).status).toBe(403);
    await a.intake.idle();
    await a.lanes.idle();
    expect(await sessionsOf(stranger)).toHaveLength(0);
    expect(fake.to(stranger)).toHaveLength(0);
    expect(await sessionsOf(phones.dup)).toHaveLength(1);
  });
});
