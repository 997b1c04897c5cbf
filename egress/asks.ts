// What the proxy holds per Session in memory: its supervisor stream, its grants from the phone, its
// open asks and the connections waiting on them, and its open connections (closed when it ends).
// One open ask per Session + host:port; every connection to it waits on it, at most askWaitMs.
import { randomUUID } from 'node:crypto';
import { grantEntry, parseHostEntry, type HostEntry } from '../common/egress/hosts.ts';
import type { EgressEvent, Grant } from '../common/egress/protocol.ts';

export type Outcome = { allowed: true } | { allowed: false; reason: string };

export interface EventStream {
  send(event: EgressEvent): void;
  /** Ends the stream from the proxy's side. */
  close(): void;
}

interface Waiter {
  settle(outcome: Outcome): void;
}

interface OpenAsk {
  id: string;
  session: string;
  host: string;
  port: number;
  method: string;
  waiters: Waiter[];
}

interface SessionState {
  stream?: EventStream;
  /** The runner Pod whose supervisor holds the stream. */
  pod?: string;
  granted: HostEntry[];
  once: Set<string>;
  denied: Set<string>;
  asks: Map<string, OpenAsk>;
  waiting: number;
  connections: Set<{ destroy(): void }>;
}

export interface AskOptions {
  askWaitMs: number;
  maxWaitingPerSession: number;
  /** Open asks of one Session at once (each is a question on the phone). */
  maxAsksPerSession: number;
  /** A repository grant: persist it for every later Session of the repository. */
  persistRepositoryGrant(session: string, entry: HostEntry): void;
  /** Counts each answer (and timeouts and drops) for the metrics. */
  counted(answer: Grant | 'timeout' | 'dropped'): void;
}

const where = (host: string, port: number) => grantEntry(host, port);

export const WAIT_REASONS = {
  timedOut: (h: string, p: number) =>
    `waiting for the phone to answer about ${where(h, p)}; try again after they answer`,
  streamClosed: (h: string, p: number) =>
    `the phone could not be asked about ${where(h, p)}: the runner's connection to the proxy closed`,
  sessionEnded: (h: string, p: number) => `the Session ended before the phone answered about ${where(h, p)}`,
  onceUsed: (h: string, p: number) =>
    `the phone allowed one connection to ${where(h, p)} and another took it; try again to ask again`,
  tooMany: (h: string, p: number) => `too many connections are waiting for the phone; ${where(h, p)} was not asked`,
  tooManyAsks: (h: string, p: number, open: number) =>
    `${open} questions of this Session are already waiting for the phone's answer; ${where(h, p)} was not asked ` +
    '(try again after they answer)',
  clientLeft: (h: string, p: number) => `the client left while waiting for the phone about ${where(h, p)}`,
  denied: (h: string, p: number) => `${where(h, p)} was denied from the phone`,
} as const;

export class Asks {
  private readonly sessions = new Map<string, SessionState>();
  private readonly byId = new Map<string, OpenAsk>();

  private readonly options: AskOptions;

  constructor(options: AskOptions) {
    this.options = options;
  }

  private state(session: string): SessionState {
    let state = this.sessions.get(session);
    if (!state) {
      state = { granted: [], once: new Set(), denied: new Set(), asks: new Map(), waiting: 0, connections: new Set() };
      this.sessions.set(session, state);
    }
    return state;
  }

  /** The Session's own part of a decision's input. */
  grantsOf(session: string, host: string, port: number) {
    const state = this.sessions.get(session);
    const key = where(host, port);
    return {
      session: state?.granted ?? [],
      once: state?.once.has(key) ?? false,
      denied: state?.denied.has(key) ?? false,
      streamOpen: state?.stream !== undefined,
    };
  }

  /** Uses up the once-grant a decision allowed by. */
  takeOnce(session: string, host: string, port: number): void {
    this.sessions.get(session)?.once.delete(where(host, port));
  }

  /** Sends an event on the Session's stream, if one is open. */
  send(session: string, event: EgressEvent): void {
    this.sessions.get(session)?.stream?.send(event);
  }

  /** The Pod whose supervisor holds the Session's stream, if one does. */
  podOf(session: string): string | undefined {
    return this.sessions.get(session)?.pod;
  }

  /** The Sessions whose supervisor stream is open. */
  withStreams(): string[] {
    return [...this.sessions].flatMap(([name, state]) => (state.stream ? [name] : []));
  }

  /** The supervisor's stream for the Session; a newer one replaces an older one. */
  attachStream(session: string, stream: EventStream, pod: string): void {
    const state = this.state(session);
    const old = state.stream;
    state.stream = stream;
    state.pod = pod;
    old?.close();
    for (const ask of state.asks.values())
      stream.send({ type: 'ask', id: ask.id, host: ask.host, port: ask.port, method: ask.method });
  }

  /** The stream closed: its Session's waiting connections are refused at once, its asks dropped. */
  detachStream(session: string, stream: EventStream): void {
    const state = this.sessions.get(session);
    if (!state || state.stream !== stream) return;
    state.stream = undefined;
    state.pod = undefined;
    this.dropAsks(state, WAIT_REASONS.streamClosed);
  }

  /** The Session ended (or its Pod changed): stream closed, waiters refused, connections cut, grants gone. */
  endSession(session: string): void {
    const state = this.sessions.get(session);
    if (!state) return;
    this.sessions.delete(session);
    state.stream?.close();
    this.dropAsks(state, WAIT_REASONS.sessionEnded);
    for (const connection of state.connections) connection.destroy();
  }

  /** Tracks an open connection of the Session's agent; returns its release. */
  track(session: string, connection: { destroy(): void }): () => void {
    const state = this.state(session);
    state.connections.add(connection);
    return () => state.connections.delete(connection);
  }

  private dropAsks(state: SessionState, reason: (h: string, p: number) => string): void {
    for (const ask of state.asks.values()) {
      this.byId.delete(ask.id);
      this.options.counted('dropped');
      for (const waiter of ask.waiters.splice(0)) waiter.settle({ allowed: false, reason: reason(ask.host, ask.port) });
    }
    state.asks.clear();
  }

  /**
   * Waits for the phone about host:port (joining the open ask, or opening one); at most askWaitMs, and no
   * longer than the client stays (`left` aborts when it hangs up: its waiting slot is free at once).
   */
  ask(session: string, host: string, port: number, method: string, left?: AbortSignal): Promise<Outcome> {
    const state = this.state(session);
    const refused = (reason: string) => Promise.resolve<Outcome>({ allowed: false, reason });
    if (!state.stream) return refused(WAIT_REASONS.streamClosed(host, port));
    if (left?.aborted) return refused(WAIT_REASONS.clientLeft(host, port));
    if (state.waiting >= this.options.maxWaitingPerSession) return refused(WAIT_REASONS.tooMany(host, port));
    const key = where(host, port);
    let ask = state.asks.get(key);
    if (!ask && state.asks.size >= this.options.maxAsksPerSession)
      return refused(WAIT_REASONS.tooManyAsks(host, port, state.asks.size));
    if (!ask) {
      ask = { id: randomUUID(), session, host, port, method, waiters: [] };
      state.asks.set(key, ask);
      this.byId.set(ask.id, ask);
      state.stream.send({ type: 'ask', id: ask.id, host, port, method });
    }
    return this.wait(state, ask, left);
  }

  private wait(state: SessionState, ask: OpenAsk, left?: AbortSignal): Promise<Outcome> {
    state.waiting++;
    return new Promise<Outcome>((resolve) => {
      const leave = (reason: string) => {
        const at = ask.waiters.indexOf(waiter);
        if (at >= 0) ask.waiters.splice(at, 1);
        waiter.settle({ allowed: false, reason });
      };
      const onLeft = () => leave(WAIT_REASONS.clientLeft(ask.host, ask.port));
      let settled = false;
      const waiter: Waiter = {
        settle: (outcome) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          left?.removeEventListener('abort', onLeft);
          state.waiting--;
          resolve(outcome);
        },
      };
      const timer = setTimeout(() => {
        this.options.counted('timeout');
        leave(WAIT_REASONS.timedOut(ask.host, ask.port));
      }, this.options.askWaitMs);
      left?.addEventListener('abort', onLeft, { once: true });
      ask.waiters.push(waiter);
    });
  }

  /** The phone's answer to an open ask of this Session; false when there is none (answered, dropped, another's). */
  answer(session: string, id: string, grant: Grant): boolean {
    const ask = this.byId.get(id);
    const state = this.sessions.get(session);
    if (!ask || ask.session !== session || !state) return false;
    this.byId.delete(id);
    state.asks.delete(where(ask.host, ask.port));
    this.options.counted(grant);
    const entry = parseHostEntry(where(ask.host, ask.port));
    const waiters = ask.waiters.splice(0);
    if (grant === 'deny') {
      state.denied.add(where(ask.host, ask.port));
      for (const w of waiters) w.settle({ allowed: false, reason: WAIT_REASONS.denied(ask.host, ask.port) });
      return true;
    }
    if (grant === 'once') {
      const [first, ...rest] = waiters;
      if (first) first.settle({ allowed: true });
      else state.once.add(where(ask.host, ask.port));
      for (const w of rest) w.settle({ allowed: false, reason: WAIT_REASONS.onceUsed(ask.host, ask.port) });
      return true;
    }
    state.denied.delete(where(ask.host, ask.port));
    if (grant === 'session') state.granted.push(entry);
    else this.options.persistRepositoryGrant(session, entry);
    for (const w of waiters) w.settle({ allowed: true });
    return true;
  }

  /** Connections waiting for the phone, all Sessions together (a gauge). */
  waitingCount(): number {
    let total = 0;
    for (const state of this.sessions.values()) total += state.waiting;
    return total;
  }
}
