// The supervisor's side of the egress proxy's protocol for one Session (common/egress/protocol.ts):
// the events stream, opened with the supervisor's own credential and opened again with backoff until
// the Session's run ends; each `ask` becomes one request through the agent run's request queue
// (status.pending kind egress, serialized with tool requests) and the phone's decision one POST;
// each `connection` goes into status.egress. An ask is dropped when its stream closes, when the agent
// run ends, or when the Session ends.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { usernameOf } from '../../common/egress/credentials.ts';
import { canonicalHost } from '../../common/egress/hosts.ts';
import {
  answersPath,
  EGRESS_PING_MS,
  eventsPath,
  type AskEvent,
  type ConnectionEvent,
  type Grant,
} from '../../common/egress/protocol.ts';
import type { Decision } from '../../common/session/schema.ts';
import { isApproval, Stopped, type Requests } from '../requests.ts';
import { SessionFinished, type StatusWriter } from '../status.ts';
import type { Egress } from './env.ts';

/** The agent run that takes asks: its request queue and the tool call running now. */
export interface Asker {
  requests: Requests;
  runningTool(): { tool: string; input: string } | undefined;
}

export interface EgressLinkDeps {
  egress: Egress;
  session: string;
  status: StatusWriter;
  log: Logger;
  /** Aborts when the Session's run is over: the stream is closed and not opened again. */
  stop: AbortSignal;
  /** Waits between two attempts to open the stream: doubling from the first to the most. */
  retry?: { firstMs: number; maxMs: number };
}

const RETRY = { firstMs: 500, maxMs: 15_000 };
/** No byte for this long (the proxy pings every EGRESS_PING_MS): the stream is dead. */
const SILENT_MS = 3 * EGRESS_PING_MS;

/** The grant the proxy is told for the phone's decision: allow (once unless scoped) or deny. */
export function grantOf(decision: Decision): Grant {
  return isApproval(decision) ? (decision.scope ?? 'once') : 'deny';
}

function askOf(value: Record<string, unknown>): AskEvent | undefined {
  const { id, host, port } = value;
  if (typeof id !== 'string' || id.length === 0 || id.length > 128) return undefined;
  if (typeof host !== 'string' || canonicalHost(host) !== host) return undefined;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { type: 'ask', id, host, port, method: String(value.method ?? '') };
}

export class EgressLink {
  private readonly deps: EgressLinkDeps;
  private readonly base: URL;
  private readonly agent: HttpAgent | HttpsAgent;
  private asker: { asker: Asker; gone: AbortController } | undefined;
  /** Asks being raised or answered: settled before the link reports it has ended. */
  private readonly open = new Set<Promise<void>>();

  constructor(deps: EgressLinkDeps) {
    this.deps = deps;
    this.base = new URL(deps.egress.url);
    // An agent of its own: never a proxy the process environment names (NODE_USE_ENV_PROXY).
    this.agent = this.base.protocol === 'https:' ? new HttpsAgent() : new HttpAgent();
  }

  /**
   * The agent run taking asks until the returned function is called: its open asks are then withdrawn,
   * and it resolves once they are off the Session.
   */
  attach(asker: Asker): () => Promise<void> {
    const gone = new AbortController();
    this.asker = { asker, gone };
    return async () => {
      gone.abort('the agent run ended');
      if (this.asker?.asker === asker) this.asker = undefined;
      await Promise.allSettled([...this.open]);
    };
  }

  /** Keeps the stream open until `stop` aborts. */
  async run(): Promise<void> {
    const retry = this.deps.retry ?? RETRY;
    let wait = retry.firstMs;
    while (!this.deps.stop.aborted) {
      const opened = await this.stream().catch((error: unknown) => {
        if (!this.deps.stop.aborted)
          this.deps.log.warn({ err: error }, 'egress events stream failed; opening it again');
        return false;
      });
      wait = opened ? retry.firstMs : Math.min(wait * 2, retry.maxMs);
      await sleep(wait, undefined, { signal: this.deps.stop }).catch(() => undefined);
    }
    await Promise.allSettled([...this.open]);
    this.agent.destroy();
  }

  private authorization(): string {
    const { pod, token } = this.deps.egress;
    return `Basic ${Buffer.from(`${usernameOf({ kind: 'supervisor', pod })}:${token}`).toString('base64')}`;
  }

  private send(method: 'GET' | 'POST', path: string, body?: string): Promise<IncomingMessage> {
    const url = new URL(path, this.base);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers = {
      authorization: this.authorization(),
      ...(body === undefined ? { accept: 'application/x-ndjson' } : { 'content-type': 'application/json' }),
    };
    return new Promise((resolve, reject) => {
      const req = send(url, { method, headers, agent: this.agent, signal: this.deps.stop });
      req.setTimeout(SILENT_MS, () => req.destroy(new Error('the egress proxy went silent')));
      req.on('error', reject);
      req.on('response', resolve);
      req.end(body);
    });
  }

  /** One stream, read to its end; false when the proxy did not open it. Its asks are dropped when it ends. */
  private async stream(): Promise<boolean> {
    const res = await this.send('GET', eventsPath(this.deps.session));
    if (res.statusCode !== 200) {
      res.resume();
      this.deps.log.warn({ status: res.statusCode }, 'the egress proxy did not open the events stream');
      return false;
    }
    const closed = new AbortController();
    try {
      for await (const line of createInterface({ input: res, crlfDelay: Infinity })) this.onLine(line, closed.signal);
    } finally {
      closed.abort('the events stream closed');
    }
    return true;
  }

  private onLine(line: string, closed: AbortSignal): void {
    if (!line.trim()) return;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return this.deps.log.warn({ line: line.slice(0, 200) }, 'egress event is not JSON; ignored');
    }
    if (event.type === 'connection') return this.deps.status.recordEgress(event as unknown as ConnectionEvent);
    if (event.type !== 'ask') return;
    const ask = askOf(event);
    if (!ask) return this.deps.log.warn({ line: line.slice(0, 200) }, 'malformed egress ask; ignored');
    const handled = this.onAsk(ask, closed)
      // The proxy's own wait then answers the agent ("the phone could not be asked").
      .catch((error: unknown) => this.deps.log.warn({ err: error, host: ask.host }, 'egress ask not answered'))
      .finally(() => this.open.delete(handled));
    this.open.add(handled);
  }

  private async onAsk(ask: AskEvent, closed: AbortSignal): Promise<void> {
    const current = this.asker;
    const { log } = this.deps;
    if (!current) return log.info({ host: ask.host, port: ask.port }, 'egress ask while no agent runs: not raised');
    const tool = current.asker.runningTool();
    const fields = { host: ask.host, port: ask.port, ...tool };
    try {
      const withdrawn = AbortSignal.any([closed, current.gone.signal]);
      const decided = await current.asker.requests.raiseUnless('egress', fields, withdrawn);
      if (!decided) return log.info({ host: ask.host, port: ask.port }, 'egress ask dropped before the phone answered');
      await this.answer(ask, grantOf(decided.decision));
    } catch (error) {
      if (error instanceof Stopped || error instanceof SessionFinished) return;
      throw error;
    }
  }

  private async answer(ask: AskEvent, grant: Grant): Promise<void> {
    const res = await this.send('POST', answersPath(this.deps.session), JSON.stringify({ id: ask.id, grant }));
    res.resume();
    const fields = { host: ask.host, port: ask.port, grant, status: res.statusCode };
    if (res.statusCode === 204) this.deps.log.info(fields, 'egress ask answered');
    else this.deps.log.warn(fields, 'the egress proxy did not take the answer (the ask is no longer open)');
  }
}

/**
 * The Session's link, opened once its status has been read (status.egress starts from what is stored);
 * the returned function closes it.
 */
export function openEgressLink(deps: Omit<EgressLinkDeps, 'stop'>): { link: EgressLink; close: () => void } {
  const stop = new AbortController();
  const link = new EgressLink({ ...deps, stop: stop.signal });
  const off = deps.status.onChange(() => {
    off();
    void link.run();
  });
  return { link, close: () => (off(), stop.abort('the Session run ended')) };
}
