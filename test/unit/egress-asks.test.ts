// The asks of egress/asks.ts: one open ask per Session + host:port however many connections wait on
// it; once lets exactly one through (or the next, when none waits); session and repository let all
// through; deny is remembered; a timeout leaves the ask open; a closed stream or an ended Session
// refuses the waiting at once; an answer for another Session's ask is not taken.
import { describe, expect, it } from 'vitest';
import type { EgressEvent } from '../../common/egress/protocol.ts';
import { Asks, type EventStream } from '../../egress/asks.ts';

function setup(askWaitMs = 60_000, maxAsksPerSession = 8) {
  const persisted: string[] = [];
  const counted: string[] = [];
  const asks = new Asks({
    askWaitMs,
    maxWaitingPerSession: 8,
    maxAsksPerSession,
    persistRepositoryGrant: (session, entry) => persisted.push(`${session} ${entry.host}:${entry.port}`),
    counted: (answer) => counted.push(answer),
  });
  const sent: EgressEvent[] = [];
  let closed = 0;
  const stream: EventStream = { send: (e) => sent.push(e), close: () => closed++ };
  asks.attachStream('s', stream, 'pod');
  const askIds = () => sent.flatMap((e) => (e.type === 'ask' ? [e.id] : []));
  return { asks, stream, sent, askIds, persisted, counted, closedCount: () => closed };
}

describe('asks', () => {
  it('asks once for many connections; once lets exactly one through', async () => {
    const { asks, askIds } = setup();
    const waiting = [1, 2, 3].map(() => asks.ask('s', 'a.example', 443, 'CONNECT'));
    expect(askIds()).toHaveLength(1);
    expect(asks.answer('s', askIds()[0]!, 'once')).toBe(true);
    const outcomes = await Promise.all(waiting);
    expect(outcomes.filter((o) => o.allowed)).toHaveLength(1);
    expect(outcomes.filter((o) => !o.allowed).map((o) => !o.allowed && o.reason)).toEqual([
      expect.stringContaining('another took it'),
      expect.stringContaining('another took it'),
    ]);
    expect(asks.grantsOf('s', 'a.example', 443).once).toBe(false);
    expect(asks.answer('s', askIds()[0]!, 'once')).toBe(false);
  });

  it('keeps a once-grant for the next connection when nobody waits any more', async () => {
    const { asks, askIds } = setup(1);
    const timedOut = await asks.ask('s', 'a.example', 443, 'GET');
    expect(timedOut).toMatchObject({ allowed: false, reason: expect.stringContaining('try again after they answer') });
    expect(asks.answer('s', askIds()[0]!, 'once')).toBe(true);
    expect(asks.grantsOf('s', 'a.example', 443).once).toBe(true);
    asks.takeOnce('s', 'a.example', 443);
    expect(asks.grantsOf('s', 'a.example', 443).once).toBe(false);
  });

  it('lets every waiting connection through on session and repository, and persists the latter', async () => {
    const { asks, askIds, persisted } = setup();
    const session = [asks.ask('s', 'a.example', 443, 'CONNECT'), asks.ask('s', 'a.example', 443, 'CONNECT')];
    asks.answer('s', askIds()[0]!, 'session');
    expect((await Promise.all(session)).every((o) => o.allowed)).toBe(true);
    expect(asks.grantsOf('s', 'a.example', 443).session.map((e) => e.host)).toEqual(['a.example']);
    const repo = asks.ask('s', 'b.example', 8080, 'CONNECT');
    asks.answer('s', askIds()[1]!, 'repository');
    expect(await repo).toEqual({ allowed: true });
    expect(persisted).toEqual(['s b.example:8080']);
  });

  it('remembers a deny for the Session', async () => {
    const { asks, askIds } = setup();
    const waiting = asks.ask('s', 'a.example', 443, 'CONNECT');
    asks.answer('s', askIds()[0]!, 'deny');
    expect(await waiting).toMatchObject({ allowed: false, reason: expect.stringContaining('denied from the phone') });
    expect(asks.grantsOf('s', 'a.example', 443).denied).toBe(true);
  });

  it('refuses the waiting at once when the stream closes or the Session ends', async () => {
    const { asks, stream, counted } = setup();
    const waiting = asks.ask('s', 'a.example', 443, 'CONNECT');
    asks.detachStream('s', stream);
    expect(await waiting).toMatchObject({
      allowed: false,
      reason: expect.stringContaining('connection to the proxy closed'),
    });
    expect(counted).toEqual(['dropped']);
    expect(await asks.ask('s', 'a.example', 443, 'CONNECT')).toMatchObject({ allowed: false });

    const other = setup();
    const cut: string[] = [];
    other.asks.track('s', { destroy: () => cut.push('tunnel') });
    const pending = other.asks.ask('s', 'b.example', 443, 'CONNECT');
    other.asks.endSession('s');
    expect(await pending).toMatchObject({ allowed: false, reason: expect.stringContaining('Session ended') });
    expect(cut).toEqual(['tunnel']);
    expect(other.closedCount()).toBe(1);
  });

  it("does not take an answer for another Session's ask", async () => {
    const { asks, askIds } = setup();
    const second: EventStream = { send: () => undefined, close: () => undefined };
    asks.attachStream('t', second, 'pod-2');
    const waiting = asks.ask('s', 'a.example', 443, 'CONNECT');
    expect(asks.answer('t', askIds()[0]!, 'session')).toBe(false);
    asks.answer('s', askIds()[0]!, 'deny');
    expect((await waiting).allowed).toBe(false);
  });

  it('sends the open asks again to a stream that replaces the old one, and closes the old one', () => {
    const { asks, closedCount } = setup();
    void asks.ask('s', 'a.example', 443, 'CONNECT');
    const seen: EgressEvent[] = [];
    asks.attachStream('s', { send: (e) => seen.push(e), close: () => undefined }, 'pod');
    expect(closedCount()).toBe(1);
    expect(seen).toEqual([expect.objectContaining({ type: 'ask', host: 'a.example', port: 443 })]);
    asks.endSession('s');
  });

  it('asks at most maxAsksPerSession questions of one Session at once, saying why the next is not asked', async () => {
    const { asks, askIds } = setup(60_000, 2);
    const open = [asks.ask('s', 'a.example', 443, 'CONNECT'), asks.ask('s', 'b.example', 443, 'CONNECT')];
    const third = await asks.ask('s', 'c.example', 443, 'CONNECT');
    expect(third).toMatchObject({ allowed: false, reason: expect.stringContaining('2 questions of this Session') });
    expect(askIds()).toHaveLength(2);
    asks.answer('s', askIds()[0]!, 'deny');
    asks.answer('s', askIds()[1]!, 'deny');
    await Promise.all(open);
    const fourth = asks.ask('s', 'c.example', 443, 'CONNECT');
    expect(askIds()).toHaveLength(3);
    asks.answer('s', askIds()[2]!, 'session');
    expect(await fourth).toEqual({ allowed: true });
  });

  it('frees the waiting slot of a client that left at once, and gives its once-grant to one still \
waiting', async () => {
    const { asks, askIds } = setup();
    const leaving = new AbortController();
    const gone = asks.ask('s', 'a.example', 443, 'CONNECT', leaving.signal);
    const staying = asks.ask('s', 'a.example', 443, 'CONNECT');
    expect(asks.waitingCount()).toBe(2);
    leaving.abort();
    expect(await gone).toMatchObject({ allowed: false, reason: expect.stringContaining('the client left') });
    expect(asks.waitingCount()).toBe(1);
    asks.answer('s', askIds()[0]!, 'once');
    expect(await staying).toEqual({ allowed: true });
  });
});
