// The pull-request records on a real API server (one ConfigMap shared by the replicas: concurrent
// writers, a hand-edited entry, notice ids), and follow-up routing through two real relays: a
// Session that opened pull request #41 is recorded, the phone's next command (through either
// replica) continues it, `prs` lists it, `new` starts from the base; the people map names the requester;
// a signed GitHub delivery of a failing check tells the phone, and *fix* starts a Session on the PR.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { LABEL_PHONE_HASH } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { eventKeyDigest, noticeId } from '../../relay/pulls/keys.ts';
import { ConfigMapPullRecords } from '../../relay/pulls/records.ts';
import type { PullRecord } from '../../relay/pulls/types.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { payloads, SECRET, signed } from '../unit/github-fixtures.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { testPhoneHash } from '../support/phone-hash.ts';
import { PUBLIC_URL, startTestRelay, type TestRelay } from '../support/relay.ts';
import { messageSid, postWebhook, signedWebhook } from '../support/twilio-webhook.ts';

const PHONE = '+14155550181';
const CONFIGMAP = 'tether-pull-requests';
const PR = { number: 41, branch: 'tether/s-41', url: 'https://github.com/acme/web/pull/41' };
const SHA = 'b'.repeat(40);
let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;
let fake: FakeTwilio;
let a: TestRelay;
let b: TestRelay;

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('pull-requests'));
  fake = await startFakeTwilio();
  const options = {
    kubeConfig: kc,
    namespace: ns,
    twilio: fake,
    allowed: [PHONE],
    env: {
      TETHER_PEOPLE: JSON.stringify([{ phone: PHONE, name: 'Ada L', github: 'ada-l' }]),
      TETHER_GITHUB_WEBHOOK_SECRET: SECRET,
    },
  };
  [a, b] = await Promise.all([startTestRelay(options), startTestRelay(options)]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await fake?.close();
  await deleteNamespace(kc, ns);
});

const records = () => new ConfigMapPullRecords(connectionFromKubeConfig(kc), { name: 'records-test', namespace: ns });
const record = (number: number, extra: Partial<PullRecord> = {}): PullRecord => ({
  owner: 'acme',
  repo: 'web',
  number,
  url: `https://github.com/acme/web/pull/${number}`,
  branch: `tether/s-${number}`,
  repoName: 'web',
  repoUrl: 'https://github.com/acme/web.git',
  phone: PHONE,
  state: 'open',
  chosenAt: new Date(Date.UTC(2026, 10, 27, 0, number)).toISOString(),
  notices: [],
  seen: [],
  ...extra,
});

describe('the pull-request records in a ConfigMap', () => {
  it('keeps every concurrent change of two replicas, one key per pull request', async () => {
    const [one, two] = [records(), records()];
    await one.update('acme', 'web', 41, () => record(41));
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? one : two).update('acme', 'web', 41, (r) => r && { ...r, seen: [...r.seen, `delivery-${i}`] }),
      ),
    );
    const stored = await two.get('acme', 'web', 41);
    const keys = Array.from({ length: 20 }, (_, i) => eventKeyDigest(`delivery-${i}`));
    expect([...stored!.seen].sort()).toEqual(keys.sort());
    const data = (await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: ns, name: 'records-test' }))
      .data!;
    expect(Object.keys(data)).toEqual(['acme.web.41']);
    expect(JSON.parse(data['acme.web.41']!)).toEqual(stored);
  });

  it('answers by phone, repository, state and notice id; reads past a hand-edited entry; deletes', async () => {
    const store = records();
    await store.update('acme', 'web', 42, () => record(42));
    await store.update('acme', 'web', 43, () => record(43, { state: 'merged' }));
    const api = kc.makeApiClient(CoreV1Api);
    const body = await api.readNamespacedConfigMap({ namespace: ns, name: 'records-test' });
    body.data = { ...body.data, 'acme.web.44': '{"owner":' };
    await api.replaceNamespacedConfigMap({ namespace: ns, name: 'records-test', body });
    expect((await store.ofPhone(PHONE)).map((r) => r.number)).toEqual([43, 42, 41]);
    expect((await store.current(PHONE, 'web'))?.number).toBe(42);
    expect((await store.open()).map((r) => r.number).sort()).toEqual([41, 42]);
    expect((await store.byNotice(noticeId(record(43), 5)))?.number).toBe(43);
    expect(await store.byNotice('pr-00000000-1')).toBeUndefined();
    await store.update('acme', 'web', 42, () => undefined);
    expect(await store.get('acme', 'web', 42)).toBeUndefined();
  });
});

const send = (relay: TestRelay, body: string) =>
  postWebhook(
    `${relay.url}/webhook`,
    signedWebhook(fake.authToken, `${PUBLIC_URL}/webhook`, { from: PHONE, body, sid: messageSid() }),
  );
const byPrompt = (prompt: string) =>
  eventually(async () => {
    const list = (await sessions.list(ns, `${LABEL_PHONE_HASH}=${testPhoneHash(PHONE)}`)).items;
    const found = list.find((s) => s.spec.prompt === prompt);
    expect(found).toBeDefined();
    return found as Session;
  });
const replyCount = () => fake.to(PHONE).length;
/** The first message after the first `before` that matches. */
const said = (before: number, pattern: RegExp) =>
  eventually(async () => {
    const found = fake
      .to(PHONE)
      .slice(before)
      .find((m) => pattern.test(m.body));
    expect(found).toBeDefined();
    return found!.body;
  });

/** What the runner writes when a command's run ends (the relay only reads it). */
async function finish(session: Session, result: Record<string, unknown>) {
  const name = session.metadata.name!;
  await sessions.patchStatus(ns, name, { phase: 'Starting' });
  await sessions.patchStatus(ns, name, { phase: 'Working' });
  await sessions.patchStatus(ns, name, {
    phase: 'Succeeded',
    completionTime: new Date().toISOString(),
    result,
  } as never);
}

describe('follow-ups through the relays', () => {
  it('a Session that opened a pull request is recorded; the next command on either replica continues it', async () => {
    let before = replyCount();
    await send(a, 'fix the navbar');
    const first = await byPrompt('fix the navbar');
    expect(first.spec).toMatchObject({ channel: 'whatsapp', requester: { name: 'Ada L', github: 'ada-l' } });
    expect(first.spec.pullRequest).toBeUndefined();
    await said(before, /^On it/);
    before = replyCount();
    await finish(first, { prUrl: PR.url, prNumber: 41, branch: PR.branch, commit: SHA, pushed: 'opened' });
    const stored = await eventually(async () => {
      const data =
        (await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: ns, name: CONFIGMAP })).data ?? {};
      expect(data['acme.web.41']).toBeDefined();
      return JSON.parse(data['acme.web.41']!) as PullRecord;
    });
    expect(stored).toMatchObject({ ...PR, owner: 'acme', repo: 'web', phone: PHONE, state: 'open', headSha: SHA });
    await said(before, /^✅ Pull request opened/);

    before = replyCount();
    await send(b, 'also make it blue');
    const followUp = await byPrompt('also make it blue');
    expect(followUp.spec.pullRequest).toEqual(PR);
    await said(before, /^On it \(session [0-9a-f]{4}\) — continuing PR #41\./);

    before = replyCount();
    await finish(followUp, { prUrl: PR.url, prNumber: 41, branch: PR.branch, commit: SHA, pushed: 'added' });
    await said(before, /^✅ Pushed to pull request #41/);
    before = replyCount();
    await send(a, 'prs');
    await said(before, /• #41 fix the navbar — open · current/);

    before = replyCount();
    await send(b, 'new add a footer');
    const fresh = await byPrompt('add a footer');
    expect(fresh.spec.pullRequest).toBeUndefined();
    await said(before, /— a new pull request from main\./);
  });
});

describe('a notice and its fix through the relay', () => {
  it('a failing check on the pull request is told; *fix* typed starts a Session with the fix on the PR', async () => {
    let before = replyCount();
    const delivery = signed('check_run', payloads.checkFailed({ id: 301, sha: SHA, number: 41, name: 'unit' }));
    const response = await fetch(`${a.url}/github/webhook`, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
    });
    expect(response.status).toBeLessThan(300);
    await said(before, /#41/);
    before = replyCount();
    await send(b, 'fix');
    const fix = await byPrompt('Fix the failing checks on pull request #41');
    expect(fix.spec).toMatchObject({
      pullRequest: PR,
      fix: { kind: 'checks', headSha: SHA, checkRuns: [301] },
      requester: { name: 'Ada L' },
    });
    await said(before, /— continuing PR #41\./);
  });
});
