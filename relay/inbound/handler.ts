// Acts on one accepted inbound message: claim it (idempotency), route it, write the Session
// (create, cancel, append a decision) and queue the reply behind the phone's earlier messages.
import type { Logger } from 'pino';
import { isConflict } from '../../common/kube/errors.ts';
import { matchDiffFile } from '../../common/session/diff-files.ts';
import { maskPhone, phoneHash } from '../../common/session/display.ts';
import { ANNOTATION_RECEIVED_AT } from '../../common/session/order.ts';
import type { SessionDefaults } from '../../common/session/defaults.ts';
import { ANNOTATION_DELIVERED, LABEL_PART_OF, LABEL_PHONE_HASH, sessionName, workspaceName } from '../../common/session/names.ts';
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
  /** messages processed at once (default 16); more raises throughput and webhook ack latency */
  concurrency?: number;
}

export type InboundOutcome = 'duplicate' | Route['kind'];

const RECENT_IDS = 10_000;

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
  /** bounds messages in progress, so acknowledging new webhooks never waits behind a backlog */
  private readonly limit: ReturnType<typeof concurrencyLimit>;
  /** ids this replica has already taken: copies are dropped without a round trip to the API server */
  private readonly recent = new Set<string>();

  constructor(options: InboundOptions) {
    this.o = options;
    this.limit = concurrencyLimit(options.concurrency ?? 16);
  }

  /**
   * For messages already acknowledged to their sender: a failure here (API server unreachable
   * while claiming) is counted, logged, and told to the user, who can send again.
   */
  async accept(message: InboundMessage): Promise<InboundOutcome | 'failed'> {
    try {
      return await this.limit(() => this.handle(message));
    } catch (error) {
      this.o.metrics.inboundFailures.inc();
      this.o.logger.error({ phoneHash: phoneHash(message.from), err: error }, 'could not accept an inbound message');
      await this.o.lanes.run(message.from, () => this.o.outbox.deliver(message.from, [{ text: text.failedToAccept() }]));
      return 'failed';
    }
  }

  /** Resolves once the message has been acted on and its reply sent. */
  async handle(message: InboundMessage): Promise<InboundOutcome> {
    if (this.recent.has(message.id)) {
      this.o.metrics.duplicates.inc();
      return 'duplicate';
    }
    this.recent.add(message.id);
    if (this.recent.size > RECENT_IDS) this.recent.delete(this.recent.values().next().value!);
    let outcome: InboundOutcome = 'empty';
    // The phone's lane is taken before the claim's round trip, so its messages are acted on in the
    // order they arrived even when their claims complete out of order.
    await this.o.lanes.run(message.from, async () => {
      if (!(await this.o.claims.claim(message.id, message.from))) {
        this.o.metrics.duplicates.inc();
        outcome = 'duplicate';
        return;
      }
      this.o.phones.noteInbound(message.from);
      const reply = await this.act(message).catch((error: unknown) => {
        this.o.metrics.inboundFailures.inc();
        this.o.logger.error({ phoneHash: phoneHash(message.from), err: error }, 'could not act on an inbound message');
        return { kind: 'empty', reply: text.failedToAccept() } as const;
      });
      outcome = reply.kind;
      if (reply.reply) await this.o.outbox.deliver(message.from, [{ text: reply.reply }]);
    });
    return outcome;
  }

  private async act(message: InboundMessage): Promise<{ kind: Route['kind']; reply?: string }> {
    const phone = message.from;
    const view = this.o.phones.context(phone);
    const r = route(message.body, view, this.o.defaults.maxQueued);
    const log = this.o.logger.child({ phoneHash: phoneHash(phone) });
    log.info({ route: r.kind, transport: message.transport }, 'inbound message');
    switch (r.kind) {
      case 'empty': return { kind: r.kind, reply: text.empty() };
      case 'help': return { kind: r.kind, reply: text.help() };
      case 'tooLong': return { kind: r.kind, reply: text.tooLong(LIMITS.promptChars) };
      case 'nothingPending': return { kind: r.kind, reply: text.nothingPending() };
      case 'queueFull': return { kind: r.kind, reply: text.queueFull(this.o.defaults.maxQueued) };
      case 'instructions': return { kind: r.kind, reply: text.instructions(r.pending, r.hint) };
      case 'status':
      {
        const shown = view.session ?? view.open[0];
        return { kind: r.kind, reply: shown ? text.status(shown, view.open.length - 1, Date.now()) : text.idle() };
      }
      case 'cancel': {
        if (!view.open.length) return { kind: r.kind, reply: text.nothingToCancel() };
        // Queued ones first: when the active one ends, its queue is already marked as the user's cancel.
        const queuedFirst = [...view.open].sort((a, b) => Number(a === view.session) - Number(b === view.session));
        for (const s of queuedFirst) await this.o.sessions.patch(this.o.namespace, s.metadata.name!, { spec: { cancel: true } });
        const first = view.session ?? view.open[0]!;
        return { kind: r.kind, reply: text.cancelling(first.metadata.name!, view.open.length - 1) };
      }
      case 'start':
      case 'queue': {
        const created = await this.create(phone, r.prompt, r.kind === 'queue', message.receivedAt ?? new Date().toISOString());
        log.info({ session: created.metadata.name }, 'session created');
        return { kind: r.kind, reply: r.kind === 'start' ? text.started(created.metadata.name!) : text.queued(r.position) };
      }
      case 'decide':
        return { kind: r.kind, reply: await this.decide(r.session, r.decision, `${message.transport}:${maskPhone(phone)}`) };
      case 'diff': return { kind: r.kind, reply: await this.askDiff(view.session, r.file) };
    }
  }

  /** Hands a known file to the runner (spec.diffRequests), whose pages then reach the phone; else says which files there are. */
  private async askDiff(current: Session | undefined, asked: string): Promise<string | undefined> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const session = current && await this.o.sessions.get(this.o.namespace, current.metadata.name!);
      const files = session?.status?.result?.diffFiles;
      if (!session || session.status?.pending?.kind !== 'changes' || !files) return text.noDiff();
      const file = matchDiffFile(files.names, asked);
      if (file === undefined) return text.diffFiles(asked, files);
      const requests = session.spec.diffRequests ?? [];
      if (requests.length >= LIMITS.diffRequests) return text.diffLimit(LIMITS.diffRequests);
      try {
        await this.o.sessions.patch(this.o.namespace, session.metadata.name!, {
          metadata: { resourceVersion: session.metadata.resourceVersion }, spec: { diffRequests: [...requests, file] },
        });
        return undefined;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }
    throw new Error('diff request kept conflicting');
  }

  private async create(phone: string, prompt: string, queued: boolean, receivedAt: string): Promise<Session> {
    const resume = this.o.phones.resumeId(phone);
    const spec: SessionSpec = {
      phone, prompt, repo: this.o.repo, workspace: workspaceName(phone), timeouts: { ...this.o.defaults.timeouts },
      ...(resume ? { resumeAgentSession: resume } : {}),
    };
    const delivered = writeDelivered({ n: 1, seq: 0, started: !queued, queued });
    const session = await this.o.sessions.create(this.o.namespace, sessionName(phone), spec, {
      labels: { [LABEL_PHONE_HASH]: phoneHash(phone), [LABEL_PART_OF]: 'tether' },
      annotations: { [ANNOTATION_DELIVERED]: delivered, [ANNOTATION_RECEIVED_AT]: receivedAt },
    });
    this.o.phones.remember(session);
    return session;
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
