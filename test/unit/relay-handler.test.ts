// The inbound handler with an in-memory Session store: what is written and what is replied.
import { pino } from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { ANNOTATION_DELIVERED } from '../../common/session/names.ts';
import { INBOUND_CONCURRENCY } from '../../relay/defaults.ts';
import type { InboundOptions } from '../../relay/inbound/handler.ts';
import { createMetrics, type RelayMetrics } from '../../relay/metrics.ts';
import type { SessionApi } from '../../relay/session-store.ts';
import { WebChat } from '../../relay/transports/web.ts';
import { chatHandler } from '../support/chat-handler.ts';
import { MemorySessions } from '../support/memory-sessions.ts';
import { InboundImages } from '../../relay/inbound/media-in.ts';
import { solidPng } from '../support/pictures.ts';

const phone = '+15555550100';
let store: MemorySessions;
let chat: WebChat;
let metrics: RelayMetrics;
let seen: Set<string>;

const firstClaim = async (id: string) => (seen.has(id) ? false : (seen.add(id), true));

function handler(
  claim: (id: string) => Promise<boolean> = firstClaim,
  sessions: SessionApi = store,
  extra: Partial<InboundOptions> = {},
) {
  return chatHandler(
    { store, chat, metrics, logger: pino({ level: 'silent' }), sessions },
    { claims: { claim }, ...extra },
  );
}
const msg = (body: string, id = `web-${Math.random()}`) => ({ id, from: phone, body, transport: 'web' as const });
const replies = () =>
  chat
    .entries()
    .filter((e) => e.from === 'bot')
    .map((e) => e.text);

beforeEach(() => {
  store = new MemorySessions('ns');
  chat = new WebChat({ phone, token: 't'.repeat(20) });
  metrics = createMetrics();
  seen = new Set();
});

describe('InboundHandler', () => {
  it('creates a Session with the spec, labels and delivered annotation, then says it started', async () => {
    expect(await handler().accept(msg('make the navbar sticky'))).toBe('start');
    const [s] = store.list();
    expect(s!.spec).toEqual({
      phone,
      prompt: 'make the navbar sticky',
      repo: { url: 'https://github.com/acme/web.git', baseBranch: 'main' },
      workspace: expect.stringMatching(/^ws-[0-9a-f]{16}$/),
      timeouts: { run: '60m', approval: '30m' },
      channel: 'web',
    });
    expect(s!.metadata.labels).toMatchObject({
      'tether.dev/phone-hash': expect.stringMatching(/^[0-9a-f]{16}$/),
      'app.kubernetes.io/part-of': 'tether',
    });
    expect(JSON.parse(s!.metadata.annotations![ANNOTATION_DELIVERED]!)).toEqual({
      n: 1,
      seq: 0,
      started: true,
      queued: false,
    });
    expect(replies()).toEqual([`On it (session ${s!.metadata.name!.slice(-4)}). Reply *cancel* to stop.`]);
  });

  it('handles the same id once, in this replica and across replicas', async () => {
    const h = handler();
    const results = await Promise.all([
      h.accept(msg('one', 'id-1')),
      h.accept(msg('one', 'id-1')),
      handler().accept(msg('one', 'id-1')),
    ]);
    expect(results.sort()).toEqual(['duplicate', 'duplicate', 'start']);
    expect(store.list()).toHaveLength(1);
    expect((await metrics.duplicates.get()).values[0]!.value).toBe(2);
  });

  it("acts on a phone's messages in the order they arrived, even when their claims finish out of order", async () => {
    const delays: Record<string, number> = { first: 60, second: 0 };
    const slowFirst = async (id: string) => {
      await new Promise((r) => setTimeout(r, delays[id] ?? 0));
      return firstClaim(id);
    };
    const h = handler(slowFirst);
    await Promise.all([h.accept(msg('first command', 'first')), h.accept(msg('second command', 'second'))]);
    expect(replies()[0]).toMatch(/^On it/);
    expect(replies()[1]).toMatch(/^Queued \(#2\)/);
    expect(store.list().map((x) => x.spec.prompt)).toEqual(['first command', 'second command']);
  });

  it('continues the agent conversation of the phone', async () => {
    const h = handler();
    await h.accept(msg('first'));
    const [first] = store.list();
    await store.patchStatus('ns', first!.metadata.name!, {
      phase: 'Succeeded',
      result: { agentSessionId: 'agent-42' },
    });
    await h.accept(msg('second'));
    expect(store.list().find((s) => s.spec.prompt === 'second')!.spec.resumeAgentSession).toBe('agent-42');
  });

  it('answers a request once even when two answers race', async () => {
    const h = handler();
    const other = handler(); // a second replica
    await h.accept(msg('task'));
    const name = store.list()[0]!.metadata.name!;
    await store.patchStatus('ns', name, {
      phase: 'AwaitingApproval',
      pending: { id: 'c1', kind: 'changes', createdAt: new Date().toISOString() },
    });
    await Promise.all([h.accept(msg('approve')), other.accept(msg('reject'))]);
    const decisions = store.list()[0]!.spec.decisions!;
    expect(decisions).toHaveLength(1);
    expect(replies().at(-1)).toBe('That request was already answered.');
  });

  it(`diff <file>: a known file goes to the runner (spec.diffRequests); an unknown one gets the list; none without a \
review`, async () => {
    const h = handler();
    expect(await h.accept(msg('diff src/app.ts'))).toBe('diff');
    expect(replies().at(-1)).toBe(
      'No changes are waiting for your review. *diff <file>* shows a changed file while they are.',
    );
    await h.accept(msg('task'));
    const name = store.list()[0]!.metadata.name!;
    await store.patchStatus('ns', name, {
      phase: 'AwaitingApproval',
      pending: { id: 'c1', kind: 'changes', createdAt: new Date().toISOString() },
      result: { diffFiles: { names: ['src/app.ts', 'README.md'], total: 14, shown: 2 } },
    });
    const before = replies().length;
    await h.accept(msg('diff app.ts'));
    await h.accept(msg('Diff readme.md'));
    expect(store.list()[0]!.spec.diffRequests).toEqual(['src/app.ts', 'README.md']);
    expect(replies()).toHaveLength(before);
    await h.accept(msg('diff <script>'));
    expect(replies().at(-1)).toBe(
      'No changed file matches "<script>". The changed files:\n• src/app.ts\n• README.md\n…and 12 more.\nReply ' +
        '*diff <file>* to see one.',
    );
    expect(store.list()[0]!.spec.diffRequests).toHaveLength(2);
  });

  const unreachable = (failures: number): SessionApi => ({
    get: (ns, name) => store.get(ns, name),
    patch: (ns, name, patch) => store.patch(ns, name, patch),
    create: async (...args) => {
      if (failures-- > 0) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      return store.create(...args);
    },
  });

  it('retries a failing API call within its window and then acts once', async () => {
    expect(await handler(firstClaim, unreachable(2), { retryForMs: 5_000 }).accept(msg('make it so'))).toBe('start');
    expect(store.list()).toHaveLength(1);
    expect(replies()).toHaveLength(1);
    expect(replies()[0]).toMatch(/^On it/);
  });

  it('tells the user to resend when the API server stays unreachable past the window, and counts it', async () => {
    let now = 0;
    let tries = 0;
    const failing: SessionApi = {
      ...unreachable(0),
      create: async () => {
        tries++;
        now += 30_000; // each failed call takes half of the default 60 s window on the injected clock
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
    };
    const outcome = await handler(firstClaim, failing, { now: () => now }).accept(msg('make it so'));
    expect(outcome).toBe('failed');
    expect(tries).toBe(2);
    expect(replies()).toEqual(["Sorry, that message didn't go through on our side. Please send it again in a minute."]);
    expect((await metrics.inboundFailures.get()).values[0]!.value).toBe(1);
    expect(store.list()).toHaveLength(0);
  });

  it('stamps a decision with the injected clock', async () => {
    const at = Date.parse('2026-01-02T03:04:05.000Z');
    const h = handler(firstClaim, store, { now: () => at });
    await h.accept(msg('task'));
    const name = store.list()[0]!.metadata.name!;
    await store.patchStatus('ns', name, {
      phase: 'AwaitingApproval',
      pending: { id: 'c1', kind: 'changes', createdAt: new Date(at).toISOString() },
    });
    await h.accept(msg('approve'));
    expect(store.list()[0]!.spec.decisions).toEqual([
      expect.objectContaining({ requestId: 'c1', action: 'approve', at: '2026-01-02T03:04:05.000Z' }),
    ]);
  });

  it('reports the status of a queued-only phone instead of "nothing running"', async () => {
    const h = handler();
    await h.accept(msg('one'));
    await store.patchStatus('ns', store.list()[0]!.metadata.name!, { phase: 'Queued' });
    await h.accept(msg('status'));
    expect(replies().at(-1)).toMatch(/^Session [0-9a-f]{4} · Queued for \d+ s · queue: 0$/);
  });

  it('refuses a command beyond the configured queue limit and says that limit', async () => {
    const h = handler(firstClaim, store, {
      repo: { url: 'https://github.com/acme/web.git' },
      defaults: { maxQueued: 1, timeouts: { run: '2h', approval: '45m' } },
    });
    expect(await h.accept(msg('one'))).toBe('start');
    expect(await h.accept(msg('two'))).toBe('queue');
    expect(await h.accept(msg('three'))).toBe('queueFull');
    expect(replies().at(-1)).toBe(
      'You already have 1 command waiting. Wait for one to finish, or reply *cancel* to clear them.',
    );
    expect(store.list().map((s) => s.spec.timeouts)).toEqual([
      { run: '2h', approval: '45m' },
      { run: '2h', approval: '45m' },
    ]);
  });

  it('does not count inbound work in outbound_queue_depth, only the reply being sent', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let creating!: () => void;
    const created = new Promise<void>((resolve) => (creating = resolve));
    const slowCreate: SessionApi = {
      get: (ns, name) => store.get(ns, name),
      patch: (ns, name, patch) => store.patch(ns, name, patch),
      create: async (...args) => (creating(), await gate, store.create(...args)),
    };
    const accepted = handler(firstClaim, slowCreate).accept(msg('make the navbar sticky'));
    await created;
    expect((await metrics.outboundQueueDepth.get()).values[0]?.value ?? 0).toBe(0);
    release();
    expect(await accepted).toBe('start');
    expect(replies()).toHaveLength(1);
    expect((await metrics.outboundQueueDepth.get()).values[0]!.value).toBe(0);
  });

  it('a copy of a picture command seen by another replica (or after a restart) fetches no picture again', async () => {
    const fetched: string[] = [];
    const kept = new Map<string, Buffer>();
    const images = () =>
      new InboundImages({
        fetch: async (url) => (fetched.push(url), solidPng(2, 2)),
        store: { putImage: async (ref, _type, bytes) => void kept.set(ref, bytes) },
        namespace: 'ns',
        maxBytes: 4096,
      });
    const picture = {
      ...msg('like this', 'MM-photo-1'),
      media: [{ url: 'https://api.twilio.com/x/ME1', contentType: 'image/png' }],
    };
    expect(await handler(firstClaim, store, { images: images() }).accept(picture)).toBe('start');
    expect(await handler(firstClaim, store, { images: images() }).accept(picture)).toBe('duplicate');
    expect(fetched).toHaveLength(1);
    expect(store.list()).toHaveLength(1);
    expect(kept.size).toBe(1);
  });

  it('acts on at most INBOUND_CONCURRENCY messages at once by default; the rest wait their turn', async () => {
    let running = 0;
    let most = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held: SessionApi = {
      get: (namespace, name) => store.get(namespace, name),
      patch: (namespace, name, patch) => store.patch(namespace, name, patch),
      async create(...args) {
        most = Math.max(most, ++running);
        await gate;
        running--;
        return store.create(...args);
      },
    };
    const h = handler(firstClaim, held);
    const phones = Array.from({ length: 3 * INBOUND_CONCURRENCY }, (_, i) => `+1555555${String(1000 + i)}`);
    const accepted = Promise.all(phones.map((from, i) => h.accept({ ...msg(`command ${i}`), from })));
    await new Promise((r) => setTimeout(r, 50));
    expect(most).toBe(INBOUND_CONCURRENCY);
    release();
    expect(new Set(await accepted)).toEqual(new Set(['start']));
    expect(store.list()).toHaveLength(phones.length);
    expect(most).toBe(INBOUND_CONCURRENCY);
  });
});
