// POST /github/webhook over real HTTP, with the real journal on disk: forged, malformed, replayed
// and foreign deliveries act on nothing; a delivery about a phone's pull request sends one notice,
// however often it arrives; a journaled delivery is acted on after a restart.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { GithubDelivery } from '../../relay/github/deliveries.ts';
import { eventsOf } from '../../relay/github/events.ts';
import { Journal } from '../../relay/inbound/journal.ts';
import { eventKeyDigest } from '../../relay/pulls/keys.ts';
import { startGithubRelay, type GithubRelay } from './github-relay.ts';
import {
  MemoryRecords,
  PHONE,
  payloads,
  pullRecord,
  signatureOf,
  signed,
  type SignedDelivery,
} from './github-fixtures.ts';

const SIG = 'x-hub-signature-256';

type Relay = GithubRelay;
const open: Relay[] = [];
afterEach(async () => {
  for (const relay of open.splice(0)) await relay.close();
});

const startRelay = async (o: Parameters<typeof startGithubRelay<MemoryRecords>>[0] = {}) => {
  const relay = await startGithubRelay<MemoryRecords>(o);
  open.push(relay);
  return relay;
};

const post = (relay: Relay, d: SignedDelivery) =>
  fetch(`${relay.base}/github/webhook`, { method: 'POST', headers: d.headers, body: d.body });
const texts = (relay: Relay) => relay.sent.flatMap((s) => s.parts.map((p) => p.text));
const counted = async (relay: Relay, outcome: string) =>
  (await relay.metrics.githubWebhookRequests.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;

/** Nothing journaled, nothing written to a record, nothing sent. */
async function expectNothingActedOn(relay: Relay) {
  await relay.deliveries.idle();
  expect(relay.journal.depth).toBe(0);
  expect(relay.records.writes).toBe(0);
  expect(relay.sent).toEqual([]);
}

describe('POST /github/webhook refuses what GitHub did not sign', () => {
  it('answers 404 when no webhook secret is set', async () => {
    const relay = await startRelay({ secret: null });
    expect((await post(relay, signed('check_run', payloads.checkFailed()))).status).toBe(404);
    await expectNothingActedOn(relay);
  });

  it.each([
    ['a missing signature', (d: SignedDelivery) => delete d.headers[SIG]],
    ['a signature with another secret', (d: SignedDelivery) => (d.headers[SIG] = signatureOf(d.body, 'other-secret'))],
    ['a body changed after signing', (d: SignedDelivery) => (d.body = d.body.replace('"failure"', '"success"'))],
    ['a malformed signature', (d: SignedDelivery) => (d.headers[SIG] = 'sha1=abc')],
    ['a truncated signature', (d: SignedDelivery) => (d.headers[SIG] = d.headers[SIG]!.slice(0, -2))],
  ])('401 for %s, counted, nothing acted on', async (_, spoil) => {
    const relay = await startRelay();
    const delivery = signed('check_run', payloads.checkFailed());
    spoil(delivery);
    const res = await post(relay, delivery);
    expect(res.status).toBe(401);
    expect(await res.text()).toMatch(/X-Hub-Signature-256/);
    expect(await counted(relay, 'rejected_401')).toBe(1);
    await expectNothingActedOn(relay);
  });

  it.each([
    ['x-github-delivery', 400],
    ['x-github-event', 400],
  ])('a signed delivery without %s: %i, nothing acted on', async (header, status) => {
    const relay = await startRelay();
    const delivery = signed('check_run', payloads.checkFailed());
    delete delivery.headers[header];
    expect((await post(relay, delivery)).status).toBe(status);
    await expectNothingActedOn(relay);
  });

  it('a signed body that is not JSON: 400; a form-encoded one: 415; nothing acted on', async () => {
    const relay = await startRelay();
    const notJson = { ...signed('check_run', {}), body: '{"action":' };
    notJson.headers[SIG] = signatureOf(notJson.body);
    const notJsonRes = await post(relay, notJson);
    expect([notJsonRes.status, await notJsonRes.text()]).toEqual([400, 'the body is not JSON']);
    const form = signed('check_run', payloads.checkFailed());
    form.headers['content-type'] = 'application/x-www-form-urlencoded';
    expect((await post(relay, form)).status).toBe(415);
    await expectNothingActedOn(relay);
  });

  it('a body over 1 MiB: 413, counted, nothing acted on', async () => {
    const relay = await startRelay();
    const big = signed('check_run', { ...payloads.checkFailed(), padding: 'x'.repeat(1024 * 1024) });
    expect((await post(relay, big)).status).toBe(413);
    expect(await counted(relay, 'error')).toBe(1);
    await expectNothingActedOn(relay);
  });
});

describe('POST /github/webhook acts once, and only on pull requests Tether opened', () => {
  it('tells the phone of a failing check on its pull request once, fix / ignore / details bound to it', async () => {
    const relay = await startRelay();
    const delivery = signed('check_run', payloads.checkFailed());
    const res = await post(relay, delivery);
    expect([res.status, await res.text()]).toEqual([202, 'recorded']);
    await relay.deliveries.idle();
    expect(relay.sent).toHaveLength(1);
    const [{ phone, parts }] = relay.sent as [Relay['sent'][number]];
    expect(phone).toBe(PHONE);
    expect(parts[0]!.text).toContain('Check *ci / lint* failed on pull request #7 (web).');
    expect(parts[0]!.text).toContain('│ src/nav.ts:3 missing semicolon');
    const id = (await relay.records.only()).notices[0]!.id;
    expect(id).toMatch(/^pr-[0-9a-f]{8}-1$/);
    expect(parts[0]!.actions!.map((a) => a.payload)).toEqual([`fix:${id}`, `ignore:${id}`, `details:${id}`]);
    expect((await relay.records.only()).notices[0]).toMatchObject({
      sent: true,
      checkRuns: [101],
      headSha: payloads.checkFailed().check_run.head_sha,
    });
    expect(relay.journal.depth).toBe(0);
  });

  it('a replayed delivery (same id) and a redelivery under a new id change nothing more', async () => {
    const relay = await startRelay();
    const delivery = signed('check_run', payloads.checkFailed());
    expect((await post(relay, delivery)).status).toBe(202);
    await relay.deliveries.idle();
    const writes = relay.records.writes;
    const again = await post(relay, delivery);
    expect([again.status, await again.text()]).toEqual([202, 'duplicate']);
    expect((await post(relay, signed('check_run', payloads.checkFailed()))).status).toBe(202);
    await relay.deliveries.idle();
    expect(relay.sent).toHaveLength(1);
    expect(relay.records.writes).toBe(writes);
    expect((await relay.records.only()).seen).toEqual([eventKeyDigest('check_run:101:' + 'a'.repeat(40))]);
  });

  it("an unknown repository, a pull request not Tether's, another event: acknowledged, no one told", async () => {
    const relay = await startRelay();
    const foreign = [
      signed('check_run', payloads.checkFailed({ owner: 'evil', repo: 'web' })),
      signed('check_run', payloads.checkFailed({ repo: 'other' })),
      signed('check_run', payloads.checkFailed({ number: 8 })),
      signed('push', { ref: 'refs/heads/main', repository: { name: 'web', owner: { login: 'acme' } } }),
      signed('ping', { zen: 'Keep it logically awesome.' }),
    ];
    const statuses = await Promise.all(foreign.map(async (d) => (await post(relay, d)).status));
    expect(statuses).toEqual([202, 202, 202, 202, 202]);
    await relay.deliveries.idle();
    expect(relay.sent).toEqual([]);
    expect(relay.records.writes).toBe(0);
    expect(relay.journal.depth).toBe(0);
  });

  it('a flood of 1,000 deliveries: every one acknowledged, each event acted on once', async () => {
    const relay = await startRelay({ records: new MemoryRecords([pullRecord(), pullRecord({ number: 9 })]) });
    const distinct = Array.from({ length: 20 }, (_, i) =>
      signed(
        'check_run',
        payloads.checkFailed({ id: 1000 + i, number: i % 2 ? 9 : 7, sha: String(i).padStart(40, '0') }),
      ),
    );
    const flood = Array.from({ length: 1000 }, (_, i) => {
      const original = distinct[i % distinct.length]!;
      const variant = Math.floor(i / distinct.length) % 4;
      if (variant === 0) return original; // the same delivery again
      if (variant === 1) return signed('check_run', JSON.parse(original.body)); // redelivered under a new id
      // not Tether's
      if (variant === 2) return signed('check_run', payloads.checkFailed({ id: 5000 + i, number: 100 + i }));
      return { ...original, headers: { ...original.headers, [SIG]: signatureOf(original.body, 'forged') } };
    });
    const forged = flood.filter((d) => d.headers[SIG] !== signatureOf(d.body)).length;
    expect(forged).toBe(240);
    const statuses = await Promise.all(flood.map(async (d) => (await post(relay, d)).status));
    expect(statuses.filter((s) => s === 202)).toHaveLength(1000 - forged);
    expect(statuses.filter((s) => s === 401)).toHaveLength(forged);
    await relay.deliveries.idle();
    expect(relay.sent).toHaveLength(20);
    const told = relay.sent.map((s) => s.parts[0]!.actions![0]!.payload);
    expect(new Set(told).size).toBe(20);
    expect((await relay.records.all()).map((r) => r.notices.length)).toEqual([10, 10]);
    expect(relay.records.writes).toBe(40); // per event: applied once, marked sent once
    expect(relay.journal.depth).toBe(0);
  }, 60_000);
});

describe('the GitHub journal across a restart', () => {
  it('an event whose record cannot be written is tried again, and told once when it can', async () => {
    const records = new MemoryRecords([pullRecord()]);
    records.failUpdates = 2;
    const relay = await startRelay({ records, retryForMs: 60_000 });
    expect((await post(relay, signed('check_run', payloads.checkFailed()))).status).toBe(202);
    await relay.deliveries.idle();
    expect(records.failUpdates).toBe(0);
    expect(relay.sent).toHaveLength(1);
    expect((await records.only()).notices.map((n) => n.sent)).toEqual([true]);
    expect(relay.journal.depth).toBe(0);
  });

  it('a delivery journaled and not acted on before the process died is acted on at the next start, once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-journal-'));
    const records = new MemoryRecords([pullRecord()]);
    const first = await startRelay({ dir, records, failing: true });
    expect((await post(first, signed('pull_request_review', payloads.review()))).status).toBe(202);
    await first.deliveries.idle();
    expect(first.journal.depth).toBe(1);
    await first.close();
    open.splice(0);

    const second = await startRelay({ dir, records });
    await second.deliveries.idle();
    expect(texts(second)).toEqual([expect.stringContaining('✋ octocat asked for changes on pull request #7 (web).')]);
    expect(second.journal.depth).toBe(0);
    await second.close();
    open.splice(0);

    const third = await startRelay({ dir, records });
    await third.deliveries.idle();
    expect(third.sent).toEqual([]);
  });

  it('a notice recorded but not sent before the process died is sent by the replay, and marked sent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-journal-'));
    const [event] = eventsOf('pull_request', payloads.closed(true));
    // The first run journaled the delivery and applied its event to the record; it died before sending.
    const journal = await Journal.open<GithubDelivery>(dir);
    await journal.record({ id: 'delivery-1', event: 'pull_request', events: [event!] });
    await journal.close();
    const notice = {
      id: 'pr-00000000-1',
      kind: 'merged' as const,
      key: event!.key,
      at: '2026-11-27T01:00:00Z',
      sent: false,
    };
    const records = new MemoryRecords([pullRecord({ seen: [event!.key], notices: [notice] })]);

    const relay = await startRelay({ dir, records });
    await relay.deliveries.idle();
    expect(texts(relay)).toEqual([expect.stringContaining('🎉 Pull request #7 (web) was merged by octocat.')]);
    expect((await records.only()).notices).toEqual([{ ...notice, key: eventKeyDigest(event!.key), sent: true }]);
    expect(relay.journal.depth).toBe(0);
  });
});
