// Outbound: Session changes → messages through the real Twilio SDK to the local fake Messages API.
// The Session store is in memory here; test/integration/relay-outbound.test.ts uses the real API server.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { pino } from 'pino';
import { SESSION_DEFAULTS } from '../../common/session/defaults.ts';
import { ANNOTATION_DELIVERED } from '../../common/session/names.ts';
import type { SessionStatus } from '../../common/session/schema.ts';
import { createMetrics } from '../../relay/metrics.ts';
import { Delivery, PROMPT_LEASE_MS, type DeliveryOptions } from '../../relay/outbound/delivery.ts';
import { Outbox } from '../../relay/outbound/outbox.ts';
import { readDelivered } from '../../relay/delivered-state.ts';
import { PhoneLanes } from '../../relay/phone-lane.ts';
import { createTwilioTransport } from '../../relay/transports/twilio.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { MemorySessions } from '../support/memory-sessions.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const phone = '+14155550123';
const logger = pino({ level: 'silent' });
let fake: FakeTwilio;
let store: MemorySessions;
const running: Delivery[] = [];

function relay(
  options: { lastInboundAt?: number; templateSid?: string; writer?: DeliveryOptions['writer']; owner?: string } = {},
) {
  const metrics = createMetrics();
  const transport = createTwilioTransport({
    accountSid: fake.accountSid,
    authToken: fake.authToken,
    from: 'whatsapp:+14155238886',
    apiUrl: fake.url,
    logger,
  });
  const outbox = new Outbox({
    phoneHash: testPhoneHash,
    transportFor: () => transport,
    mediaUrl: (ref) => `https://relay.example/media/${ref}?sig=x`,
    lastInboundAt: () => options.lastInboundAt ?? Date.now(),
    templateSid: options.templateSid,
    windowMs: 23.5 * 3_600_000,
    ratePerSecond: 50,
    metrics,
    logger,
  });
  const lanes = new PhoneLanes();
  const delivery = new Delivery({
    phoneHash: testPhoneHash,
    store,
    writer: options.writer ?? store,
    lanes,
    outbox,
    progressBatchMs: 300,
    reminderBeforeMs: 5 * 60_000,
    defaults: SESSION_DEFAULTS,
    logger,
    isRecipient: (to) => to === phone,
    metrics,
    owner: options.owner ?? `relay-${running.length}`,
  });
  delivery.start();
  running.push(delivery);
  return { delivery, outbox, lanes, metrics };
}

async function newSession(
  name = 'abc-20261122080000-7f3a',
  delivered: object = { n: 1, seq: 0, started: true },
  to = phone,
) {
  await store.create(
    'ns',
    name,
    {
      phone: to,
      prompt: 'make the navbar sticky',
      repo: { url: 'https://github.com/acme/web.git' },
      workspace: 'ws-x',
      timeouts: { approval: '30m' },
    },
    { annotations: { [ANNOTATION_DELIVERED]: JSON.stringify(delivered) } },
  );
  return name;
}
const progress = (...texts: string[]) => texts.map((text, i) => ({ seq: i + 1, at: new Date().toISOString(), text }));
const set = (name: string, status: Partial<SessionStatus>) => store.patchStatus('ns', name, status);
const bodies = () => fake.to(phone).map((m) => m.body);

beforeEach(async () => {
  fake = await startFakeTwilio();
  store = new MemorySessions();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await fake.close();
});

describe('outbound delivery', () => {
  it('batches progress, shows a tool request, then the result, in order', async () => {
    const { lanes } = relay();
    const name = await newSession();
    await set(name, { phase: 'Working', progress: progress('Reading src/Navbar.tsx') });
    await fake.waitFor(phone, 1);
    const firstAt = readDelivered((await store.get('ns', name))!).progressAt!;
    await set(name, { progress: progress('Reading src/Navbar.tsx', 'Editing Navbar.tsx', 'Running npm test') });
    await fake.waitFor(phone, 2);
    expect(bodies()).toEqual(['⏳ Reading src/Navbar.tsx', '⏳ Editing Navbar.tsx\n⏳ Running npm test']);
    // The gap runs from when the first was sent out (a send's own latency varies)
    expect(readDelivered((await store.get('ns', name))!).progressAt! - firstAt).toBeGreaterThanOrEqual(300);

    await set(name, {
      phase: 'AwaitingApproval',
      pending: {
        id: 't1',
        kind: 'tool',
        tool: 'Bash',
        input: '{"command":"npm install @headlessui/react"}',
        createdAt: new Date().toISOString(),
      },
    });
    await fake.waitFor(phone, 3);
    expect(bodies()[2]).toBe(
      '🔐 The agent wants to run: `npm install @headlessui/react`\nReply *allow*, *allow always* (for this session) ' +
        'or *deny <reason>*.',
    );

    const now = Date.now();
    await set(name, {
      phase: 'Succeeded',
      pending: null as never,
      startTime: new Date(now - 192_000).toISOString(),
      completionTime: new Date(now).toISOString(),
      result: {
        prUrl: 'https://github.com/acme/web/pull/412',
        costUsd: 0.41,
        tokens: { input: 20_000, output: 8_000 },
      },
    });
    await fake.waitFor(phone, 4);
    await lanes.idle();
    expect(bodies()[3]).toBe(
      '✅ Pull request opened: https://github.com/acme/web/pull/412\nTook 3 min 12 s · $0.41 · 28k tokens',
    );
    expect(readDelivered((await store.get('ns', name))!)).toMatchObject({ seq: 3, pending: 't1', done: 'Succeeded' });
  });

  it('sends the diff image with the flushed progress and the stat as caption, then the instructions', async () => {
    relay();
    const name = await newSession();
    await set(name, {
      phase: 'AwaitingApproval',
      progress: progress('Editing theme.ts'),
      pending: { id: 'c1', kind: 'changes', summary: '2 files changed, +48 −6', createdAt: new Date().toISOString() },
      result: {
        diffStat: ' src/theme.ts | 17 +++--\n package.json | 2 +',
        media: [
          { kind: 'screenshot', ref: `ns/${name}/shot.png`, contentType: 'image/png' },
          { kind: 'diff', ref: `ns/${name}/diff.png`, contentType: 'image/png' },
        ],
      },
    });
    const sent = await fake.waitFor(phone, 2);
    expect(sent.map((m) => m.mediaUrls)).toEqual([[`https://relay.example/media/ns/${name}/diff.png?sig=x`], []]);
    // The progress the prompt flushed rides in its first message.
    expect(sent[0]!.body).toBe(
      '⏳ Editing theme.ts\nReady for review — 2 files changed, +48 −6:\n  src/theme.ts | 17 +++--\n  package.json | ' +
        '2 +',
    );
    expect(sent[1]!.body).toBe('Reply *approve* to open a pull request or *reject* to undo. (expires in 30 min)');
  });

  it('a long review: its pages in order, the last saying how many files no page shows', async () => {
    relay();
    const name = await newSession();
    const page = (n: number) => ({
      kind: 'diff' as const,
      ref: `ns/${name}/diff-${n}.png`,
      contentType: 'image/png' as const,
      caption: `12 files changed (${n}/3)`,
    });
    await set(name, {
      phase: 'AwaitingApproval',
      pending: { id: 'c1', kind: 'changes', summary: '12 files changed', createdAt: new Date().toISOString() },
      result: {
        diffStat: '12 files changed, 300 insertions(+)',
        media: [page(1), page(2), page(3)],
        diffFiles: { names: ['a.ts'], total: 12, shown: 7 },
      },
    });
    const sent = await fake.waitFor(phone, 4);
    expect(sent.map((m) => m.mediaUrls)).toEqual(
      [1, 2, 3].map((n) => [`https://relay.example/media/ns/${name}/diff-${n}.png?sig=x`]).concat([[]]),
    );
    expect(sent[0]!.body).toBe('Ready for review — 12 files changed, +300:');
    expect(sent[1]!.body).toBe('12 files changed (2/3)');
    expect(sent[2]!.body).toBe('12 files changed (3/3)\n5 more files not shown — reply *diff <file>*');
  });

  it('sends the pages answering each diff <file> request once, or says it could not draw them', async () => {
    relay();
    const name = await newSession('abc-20261122080000-7f3a', { n: 1, seq: 0, started: true, pending: 'c1' } as never);
    const pending = { id: 'c1', kind: 'changes' as const, summary: 's', createdAt: new Date().toISOString() };
    const asked = (n: number) => ({
      kind: 'diff' as const,
      ref: `ns/${name}/diff-r1-${n}.png`,
      contentType: 'image/png' as const,
      caption: `src/big.ts (${n}/2)`,
      request: 1,
    });
    await store.patch('ns', name, { spec: { diffRequests: ['src/big.ts', 'gone.ts'] } });
    await set(name, { phase: 'AwaitingApproval', pending, result: { media: [asked(1), asked(2)], diffAnswered: 1 } });
    const sent = await fake.waitFor(phone, 2);
    expect(sent.map((m) => [m.body, m.mediaUrls])).toEqual(
      [1, 2].map((n) => [`src/big.ts (${n}/2)`, [`https://relay.example/media/ns/${name}/diff-r1-${n}.png?sig=x`]]),
    );
    await set(name, { result: { media: [asked(1), asked(2)], diffAnswered: 2 } });
    await fake.waitFor(phone, 3);
    expect(bodies()[2]).toBe('Could not draw gone.ts. The list of changes above still holds.');
    expect(readDelivered((await store.get('ns', name))!).diffs).toBe(2);
  });

  it('splits long text on line boundaries with (i/n), each part within 1,600 characters', async () => {
    relay();
    const name = await newSession();
    const summary = Array.from({ length: 60 }, (_, i) => `line ${i} ${'x'.repeat(50)}`).join('\n');
    await set(name, { phase: 'Succeeded', result: { summary } });
    const sent = await fake.waitFor(phone, 3);
    expect(sent).toHaveLength(3);
    sent.forEach((m, i) => {
      expect(m.body.length).toBeLessThanOrEqual(1600);
      expect(m.body.endsWith(`(${i + 1}/3)`)).toBe(true);
    });
    expect(sent.map((m) => m.body.replace(/\n\(\d\/3\)$/, '')).join('\n')).toBe(`✅ Done (session 7f3a).\n${summary}`);
  });

  it('does not retry a failed send, and does not send it again after a restart', async () => {
    const first = relay();
    const name = await newSession();
    fake.failNext(1, 500);
    await set(name, {
      phase: 'Failed',
      result: { message: 'npm test failed (3 failing)\n    at Object.<anonymous> (/app/x.js:1:1)' },
    });
    await eventually(() => expect(fake.attempts).toBe(1));
    await first.lanes.idle();
    expect(fake.attempts).toBe(1);
    expect(fake.messages).toHaveLength(0);
    expect(await first.metrics.registry.getSingleMetricAsString('tether_relay_messages_sent_total')).toContain(
      'result="failed"} 1',
    );
    await first.delivery.stop();
    const second = relay();
    await store.start();
    await second.lanes.idle();
    expect(fake.attempts).toBe(1);
  });

  it('a restarted relay sends only what the previous one had not, and two replicas never both send', async () => {
    const a = relay();
    const name = await newSession();
    await set(name, { phase: 'Working', progress: progress('one') });
    await fake.waitFor(phone, 1);
    await a.delivery.stop();
    await set(name, { progress: progress('one', 'two') });
    const b = relay();
    const c = relay();
    await store.start();
    await fake.waitFor(phone, 2);
    await set(name, { phase: 'Cancelled' });
    await fake.waitFor(phone, 3);
    await Promise.all([b.lanes.idle(), c.lanes.idle()]);
    await new Promise((r) => setTimeout(r, 400));
    expect(bodies()).toEqual(['⏳ one', '⏳ two', '🛑 Session 7f3a cancelled.']);
  });

  describe('a prompt claimed by a relay that died before recording it as sent', () => {
    const pending = {
      id: 't1',
      kind: 'tool' as const,
      tool: 'Bash',
      input: '{"command":"npm test"}',
      createdAt: new Date().toISOString(),
    };
    const claimedAt = async (at: number) => {
      const name = await newSession(undefined, {
        n: 3,
        seq: 1,
        started: true,
        sending: { id: 't1', at, by: 'relay-a' },
      });
      await set(name, { phase: 'AwaitingApproval', progress: progress('one'), pending });
      return name;
    };

    it('is sent again by the same relay when it restarts, once, and then recorded as told', async () => {
      const name = await claimedAt(Date.now());
      const { lanes } = relay({ owner: 'relay-a' });
      await store.start();
      await fake.waitFor(phone, 1);
      await new Promise((r) => setTimeout(r, 300));
      await lanes.idle();
      expect(bodies()).toEqual([
        '🔐 The agent wants to run: `npm test`\nReply *allow*, *allow always* (for this session) or *deny <reason>*.',
      ]);
      const delivered = readDelivered((await store.get('ns', name))!);
      expect(delivered).toMatchObject({ pending: 't1', seq: 1 });
      expect(delivered.sending).toBeUndefined();
    });

    it('is left to its sender by another replica until the lease runs out, then sent by it', async () => {
      await claimedAt(Date.now());
      const other = relay({ owner: 'relay-b' });
      await store.start();
      await new Promise((r) => setTimeout(r, 300));
      await other.lanes.idle();
      expect(bodies()).toEqual([]);
      await other.delivery.stop();
      store = new MemorySessions();
      await claimedAt(Date.now() - PROMPT_LEASE_MS - 1);
      relay({ owner: 'relay-b' });
      await store.start();
      await fake.waitFor(phone, 1);
      expect(bodies()[0]).toMatch(/^🔐 The agent wants to run/);
    });
  });

  it('announces a queued command when it starts, and says nothing for a queued command cleared by cancel', async () => {
    const { lanes } = relay();
    const queued = await newSession('abc-20261122080001-9b2c', { n: 1, seq: 0, queued: true } as never);
    const cleared = await newSession('abc-20261122080002-1d4e', { n: 1, seq: 0, queued: true } as never);
    await store.patch('ns', cleared, { spec: { cancel: true } });
    await set(cleared, { phase: 'Cancelled' });
    await set(queued, { phase: 'Starting' });
    await fake.waitFor(phone, 1);
    await lanes.idle();
    expect(bodies()).toEqual(['▶️ Starting your queued command (session 9b2c): make the navbar sticky']);
  });

  it('reminds once shortly before the approval timeout', async () => {
    const { lanes } = relay();
    const name = await newSession();
    const createdAt = new Date(Date.now() - 26 * 60_000).toISOString();
    await set(name, { phase: 'AwaitingApproval', pending: { id: 'c1', kind: 'changes', createdAt } });
    await fake.waitFor(phone, 3);
    await lanes.idle();
    expect(bodies()[2]).toBe('⏰ Still waiting for your approval — it expires in 4 min.');
    await set(name, { progress: [] });
    await lanes.idle();
    expect(fake.to(phone)).toHaveLength(3);
  });

  it('tells a phone not on the allowlist nothing: logged once, counted, the allowed phone still told', async () => {
    const { lanes, metrics } = relay();
    const stranger = '+14155559999';
    const theirs = await newSession('abc-20261122080000-0bad', { n: 1, seq: 0, started: true }, stranger);
    const mine = await newSession();
    await set(theirs, {
      phase: 'AwaitingApproval',
      pending: { id: 'c1', kind: 'changes', summary: 'changed 3 files', createdAt: new Date().toISOString() },
    });
    await set(theirs, { phase: 'Succeeded', result: { prUrl: 'https://github.com/acme/web/pull/1' } });
    await set(mine, { phase: 'Working', progress: progress('Reading') });
    await fake.waitFor(phone, 1);
    await lanes.idle();
    expect(fake.to(stranger)).toEqual([]);
    expect(readDelivered((await store.get('ns', theirs))!)).toMatchObject({ n: 1, seq: 0 });
    expect(await metrics.registry.getSingleMetricAsString('tether_relay_recipients_refused_total')).toMatch(
      /_total 1$/m,
    );
  });

  it('counts a send refused for the 24-hour window (63016) apart from other failures', async () => {
    const { lanes, metrics } = relay();
    const name = await newSession();
    fake.failNext(1, 400, 63016);
    await set(name, { phase: 'Rejected' });
    await eventually(() => expect(fake.attempts).toBe(1));
    await lanes.idle();
    expect(await metrics.registry.getSingleMetricAsString('tether_relay_messages_sent_total')).toContain(
      'result="window_closed"} 1',
    );
    expect(fake.attempts).toBe(1);
  });

  it('outside the 24-hour window sends the template instead of free text', async () => {
    // An operator's approved template: the update in a sentence that neither starts nor ends with the variable.
    const template = await fetch(`${fake.url}/v1/Content`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        friendly_name: 'update',
        language: 'en',
        variables: { 1: 'news' },
        types: { 'twilio/text': { body: 'Tether update: {{1}} (reply to continue)' } },
      }),
    }).then((r) => r.json() as Promise<{ sid: string }>);
    const { lanes } = relay({ lastInboundAt: Date.now() - 24 * 3_600_000, templateSid: template.sid });
    const name = await newSession();
    await set(name, { phase: 'Succeeded', result: { prUrl: 'https://github.com/acme/web/pull/1' } });
    const [sent] = await fake.waitFor(phone, 1);
    await lanes.idle();
    expect(sent!.contentSid).toBe(template.sid);
    expect(JSON.parse(sent!.contentVariables!)).toEqual({
      1: '✅ Pull request opened: https://github.com/acme/web/pull/1',
    });
    expect(sent!.body).toBe(
      'Tether update: ✅ Pull request opened: https://github.com/acme/web/pull/1 (reply to continue)',
    );
  });

  it('counts the messages waiting to be sent in outbound_queue_depth, until each is sent or failed', async () => {
    const { outbox, metrics } = relay();
    const depth = async () => (await metrics.outboundQueueDepth.get()).values[0]!.value;
    const long = Array.from({ length: 60 }, (_, i) => `line ${i} ${'x'.repeat(50)}`).join('\n');
    fake.failNext(1, 500);
    const sending = outbox.deliver(phone, [{ text: 'one' }, { text: long }]);
    expect(outbox.queueDepth).toBe(4);
    expect(await depth()).toBe(4);
    await sending;
    expect(fake.attempts).toBe(4);
    expect(outbox.queueDepth).toBe(0);
    expect(await depth()).toBe(0);
  });

  it('retries a check the API server failed, with backoff, and then sends once', async () => {
    let failures = 0;
    const writer = {
      get: (ns: string, name: string) => store.get(ns, name),
      patch: async (...args: Parameters<MemorySessions['patch']>) => {
        if (failures++ < 2) throw Object.assign(new Error('etcdserver: request timed out'), { code: 500 });
        return store.patch(...args);
      },
    };
    relay({ writer });
    const name = await newSession();
    const failedAt = Date.now();
    await set(name, { phase: 'Rejected' });
    const [sent] = await fake.waitFor(phone, 1);
    expect(failures).toBe(3);
    expect(sent!.at - failedAt).toBeGreaterThanOrEqual(1500 - 50); // 500 ms, then 1 s
    await new Promise((r) => setTimeout(r, 300));
    expect(bodies()).toEqual(['↩️ Changes undone. Send a new command when you are ready.']);
  });
});
