// Acts on one accepted inbound message: route it, take its idempotency record (a new command's
// Session is its own record; other messages claim an entry in the shared claims), write the Session
// (create, cancel, append a decision) and queue the reply behind the phone's earlier messages.
import type { Logger } from 'pino';
import { backoffDelay } from '../../common/kube/work-queue.ts';
import { isAlreadyExists, isConflict } from '../../common/kube/errors.ts';
import { askDiff } from './diff-request.ts';
import { maskPhone, phoneHash } from '../../common/session/display.ts';
import { ANNOTATION_RECEIVED_AT } from '../../common/session/order.ts';
import type { SessionDefaults } from '../../common/session/defaults.ts';
import {
  ANNOTATION_ACCEPTED_BY, ANNOTATION_DELIVERED, LABEL_PART_OF, LABEL_PHONE_HASH, commandSessionName, workspaceName,
} from '../../common/session/names.ts';
import { LIMITS, type Session, type SessionSpec } from '../../common/session/schema.ts';
import { writeDelivered } from '../delivered-state.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { Outbox } from '../outbound/outbox.ts';
import type { PhoneLanes } from '../phone-lane.ts';
import type { SessionApi } from '../session-store.ts';
import { text } from '../text.ts';
import type { MessageClaims } from './claims.ts';
import type { PhoneView } from './phone-view.ts';
import { route, type DecisionDraft, type Route } from './router.ts';

export interface InboundMessage {
  /** MessageSid (Twilio) or a client-made id (web chat) */
  id: string;
  /** E.164, without the whatsapp: prefix */
  from: string;
  body: string;
  transport: 'twilio' | 'web';
  /** When the relay received it (ISO, milliseconds): orders a phone's commands. */
  receivedAt?: string;
}

export interface InboundOptions {
  sessions: SessionApi;
  claims: MessageClaims;
  phones: PhoneView;
  lanes: PhoneLanes;
  outbox: Outbox;
  namespace: string;
  repo: SessionSpec['repo'];
  /** spec.timeouts of new Sessions, and how many commands a phone may have waiting */
  defaults: SessionDefaults;
  metrics: RelayMetrics;
  logger: Logger;
  /** messages processed at once (default 16) */
  concurrency?: number;
  /** this relay's journal identity, written on the Sessions it creates (default: none) */
  owner?: string;
  /** keeps a message's route, so that a replay after a crash acts on the same request */
  onRouted?(id: string, route: Route): Promise<void>;
  /** how long a failing API call is retried before the user is asked to send again (default 60 s) */
  retryForMs?: number;
}

export type InboundOutcome = 'duplicate' | Route['kind'];

const RECENT_IDS = 10_000;
const RETRY = { baseMs: 250, maxMs: 5_000 };
/** Routes whose meaning does not depend on the phone's state: a copy only repeats a reply. */
const STATELESS = new Set<Route['kind']>(['help', 'status', 'empty']);
const CREATES = new Set<Route['kind']>(['start', 'queue']);

class Duplicate extends Error {}

function concurrencyLimit(max: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (running >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await task();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

export class InboundHandler {
  private readonly o: InboundOptions;
  /** bounds messages in progress */
  private readonly limit: ReturnType<typeof concurrencyLimit>;
  /** ids this replica has already taken: copies are dropped without a round trip to the API server */
  private readonly recent = new Set<string>();

  constructor(options: InboundOptions) {
    this.o = options;
    this.limit = concurrencyLimit(options.concurrency ?? 16);
  }

  /**
   * For messages already acknowledged to their sender. `given`: the route a replayed message was
   * given before a restart. API failures are retried for a while; then the user is asked to resend.
   */
  async accept(message: InboundMessage, given?: Route): Promise<InboundOutcome | 'failed'> {
    try {
      return await this.limit(() => this.handle(message, given));
    } catch (error) {
      this.o.metrics.inboundFailures.inc();
      this.o.logger.error({ phoneHash: phoneHash(message.from), err: error }, 'could not act on an inbound message');
      await this.o.lanes.run(message.from, () => this.o.outbox.deliver(message.from, [{ text: text.failedToAccept() }]));
      return 'failed';
    }
  }

  /** Resolves once the message has been acted on and its reply sent. */
  async handle(message: InboundMessage, given?: Route): Promise<InboundOutcome> {
    if (this.recent.has(message.id)) return this.duplicate();
    this.recent.add(message.id);
    if (this.recent.size > RECENT_IDS) this.recent.delete(this.recent.values().next().value!);
    // The phone's lane is taken before any round trip, so its messages are acted on in arrival order.
    return this.o.lanes.run(message.from, async () => {
      const r = given ?? route(message.body, this.o.phones.context(message.from), this.o.defaults.maxQueued);
      if (!given) await this.o.onRouted?.(message.id, r);
      let reply: string | undefined;
      try {
        reply = await this.retrying(() => this.claimAndAct(message, r));
      } catch (error) {
        if (error instanceof Duplicate) return this.duplicate();
        throw error;
      }
      if (reply) await this.o.outbox.deliver(message.from, [{ text: reply }]);
      return r.kind;
    });
  }

  private duplicate(): 'duplicate' {
    this.o.metrics.duplicates.inc();
    return 'duplicate';
  }

  /** Runs `attempt` until it succeeds, is a duplicate, or the retry window has passed. */
  private async retrying<T>(attempt: () => Promise<T>): Promise<T> {
    const giveUpAt = Date.now() + (this.o.retryForMs ?? 60_000);
    for (let failures = 0; ; failures++) {
      try {
        return await attempt();
      } catch (error) {
        if (error instanceof Duplicate || Date.now() >= giveUpAt) throw error;
        this.o.logger.warn({ err: error, failures }, 'inbound message: API call failed; retrying');
        await new Promise((r) => setTimeout(r, Math.min(backoffDelay(failures, RETRY.baseMs, RETRY.maxMs), Math.max(0, giveUpAt - Date.now()))));
      }
    }
  }

  private async claimAndAct(message: InboundMessage, r: Route): Promise<string | undefined> {
    if (!STATELESS.has(r.kind) && !CREATES.has(r.kind) && !(await this.o.claims.claim(message.id))) throw new Duplicate();
    this.o.phones.noteInbound(message.from);
    return this.act(message, r);
  }

  private async act(message: InboundMessage, r: Route): Promise<string | undefined> {
    const phone = message.from;
    const view = this.o.phones.context(phone);
    const log = this.o.logger.child({ phoneHash: phoneHash(phone) });
    log.info({ route: r.kind, transport: message.transport }, 'inbound message');
    switch (r.kind) {
      case 'empty': return text.empty();
      case 'help': return text.help();
      case 'tooLong': return text.tooLong(LIMITS.promptChars);
      case 'nothingPending': return text.nothingPending();
      case 'queueFull': return text.queueFull(this.o.defaults.maxQueued);
      case 'instructions': return text.instructions(r.pending, r.hint);
      case 'status': {
        const shown = view.session ?? view.open[0];
        return shown ? text.status(shown, view.open.length - 1, Date.now()) : text.idle();
      }
      case 'cancel': {
        if (!view.open.length) return text.nothingToCancel();
        // Queued ones first: when the active one ends, its queue is already marked as the user's cancel.
        const queuedFirst = [...view.open].sort((a, b) => Number(a === view.session) - Number(b === view.session));
        for (const s of queuedFirst) await this.o.sessions.patch(this.o.namespace, s.metadata.name!, { spec: { cancel: true } });
        const first = view.session ?? view.open[0]!;
        return text.cancelling(first.metadata.name!, view.open.length - 1);
      }
      case 'start':
      case 'queue': {
        const created = await this.create(message, r.prompt, r.kind === 'queue');
        log.info({ session: created.metadata.name }, 'session created');
        return r.kind === 'start' ? text.started(created.metadata.name!) : text.queued(r.position);
      }
      case 'decide':
        return this.decide(r.session, r.decision, `${message.transport}:${maskPhone(phone)}`);
      case 'diff': return askDiff(this.o.sessions, this.o.namespace, view.session, r.file);
    }
  }

  /** One write: the Session, named from the message id, is also the message's idempotency record. */
  private async create(message: InboundMessage, prompt: string, queued: boolean): Promise<Session> {
    const phone = message.from;
    const name = commandSessionName(phone, message.id);
    const resume = this.o.phones.resumeId(phone);
    const spec: SessionSpec = {
      phone, prompt, repo: this.o.repo, workspace: workspaceName(phone), timeouts: { ...this.o.defaults.timeouts },
      ...(resume ? { resumeAgentSession: resume } : {}),
    };
    const annotations: Record<string, string> = {
      [ANNOTATION_DELIVERED]: writeDelivered({ n: 1, seq: 0, started: !queued, queued }),
      [ANNOTATION_RECEIVED_AT]: message.receivedAt ?? new Date().toISOString(),
      ...(this.o.owner ? { [ANNOTATION_ACCEPTED_BY]: this.o.owner } : {}),
    };
    try {
      const session = await this.o.sessions.create(this.o.namespace, name, spec, {
        labels: { [LABEL_PHONE_HASH]: phoneHash(phone), [LABEL_PART_OF]: 'tether' }, annotations,
      });
      this.o.phones.remember(session);
      return session;
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      // Created before: by this journal before a restart (answer again), or by a copy elsewhere.
      const existing = await this.o.sessions.get(this.o.namespace, name);
      if (!this.o.owner || existing?.metadata.annotations?.[ANNOTATION_ACCEPTED_BY] !== this.o.owner) throw new Duplicate();
      return existing;
    }
  }

  /** Appends the decision with optimistic concurrency; a request already answered is not answered twice. */
  private async decide(name: string, draft: DecisionDraft, by: string): Promise<string | undefined> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const session = await this.o.sessions.get(this.o.namespace, name);
      if (!session || session.status?.pending?.id !== draft.requestId) return 'That request is no longer open. Reply *status* to see where things are.';
      const decisions = session.spec.decisions ?? [];
      if (decisions.some((d) => d.requestId === draft.requestId)) return 'That request was already answered.';
      const decision = { ...draft, by, at: new Date().toISOString() };
      try {
        await this.o.sessions.patch(this.o.namespace, name, {
          metadata: { resourceVersion: session.metadata.resourceVersion },
          spec: { decisions: [...decisions, decision] },
        });
        return undefined;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }
    throw new Error('decision kept conflicting');
  }
}
