// Acts on one accepted inbound message: route it, take its idempotency record (a new command's
// Session is its own record; other messages claim an entry in the shared claims), write the Session
// (create, cancel, append a decision) and queue the reply behind the phone's earlier messages.
import type { Logger } from 'pino';
import { concurrencyLimit } from '../../common/concurrency.ts';
import { backoffDelay } from '../../common/kube/work-queue.ts';
import { isAlreadyExists, isConflict } from '../../common/kube/errors.ts';
import { askDiff } from './diff-request.ts';
import { maskPhone, phoneHash } from '../../common/session/display.ts';
import { ANNOTATION_RECEIVED_AT } from '../../common/session/order.ts';
import { DEFAULT_BASE_BRANCH, type SessionDefaults } from '../../common/session/defaults.ts';
import {
  ANNOTATION_ACCEPTED_BY,
  ANNOTATION_DELIVERED,
  LABEL_PART_OF,
  LABEL_PHONE_HASH,
  LABEL_REPO,
  commandSessionName,
} from '../../common/session/names.ts';
import { LIMITS, type Session, type SessionImage, type SessionSpec } from '../../common/session/schema.ts';
import { nameFromUrl } from '../repos.ts';
import { MemoryRepoChoices } from './repo-choices.ts';
import { PhoneRepos } from './repos.ts';
import { writeDelivered } from '../delivered-state.ts';
import { spentToday, withinDailyBudget, type CostBudget } from '../../common/session/budget.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { Outbox } from '../outbound/outbox.ts';
import type { PhoneLanes } from '../phone-lane.ts';
import type { SessionApi } from '../session-store.ts';
import { text } from '../text.ts';
import type { MessageClaims } from './claims.ts';
import type { InboundMedia } from './media-fields.ts';
import { routeMessage, type InboundImages } from './media-in.ts';
import type { PhoneView } from './phone-view.ts';
import type { CommandOptions, DecisionDraft, Route } from './router.ts';
import { routeTap } from './tap.ts';
import { INBOUND_CONCURRENCY } from '../defaults.ts';

export interface InboundMessage {
  /** MessageSid (Twilio) or a client-made id (web chat) */
  id: string;
  /** E.164, without the whatsapp: prefix */
  from: string;
  body: string;
  /** a tapped button's payload (Twilio ButtonPayload; the web chat's buttons): answers only the request it names */
  payload?: string;
  transport: 'twilio' | 'web';
  /** When the relay received it (ISO, milliseconds): orders a phone's commands. */
  receivedAt?: string;
  /** attachments the webhook announced (journaled with the message, fetched when acted on) */
  media?: InboundMedia[];
}

export interface InboundOptions {
  sessions: SessionApi;
  claims: MessageClaims;
  phones: PhoneView;
  lanes: PhoneLanes;
  outbox: Outbox;
  namespace: string;
  repo: SessionSpec['repo'];
  /** the install's repositories and the phones' defaults; absent → `repo` alone */
  repos?: PhoneRepos;
  /** spec.timeouts of new Sessions, and how many commands a phone may have waiting */
  defaults: SessionDefaults;
  metrics: RelayMetrics;
  logger: Logger;
  /** messages processed at once (default INBOUND_CONCURRENCY) */
  concurrency?: number;
  /** this relay's journal identity, written on the Sessions it creates (default: none) */
  owner?: string;
  /** keeps a message's route, so that a replay after a crash acts on the same request */
  onRouted?(id: string, route: Route): Promise<void>;
  /** how long a failing API call is retried before the user is asked to send again (default 60 s) */
  retryForMs?: number;
  /** fetches and keeps pictures sent with a command; absent → a picture gets a plain refusal */
  images?: InboundImages;
  /** the per-phone daily model budget (default: none) */
  cost?: CostBudget;
}

export type InboundOutcome = 'duplicate' | Route['kind'];

const RECENT_IDS = 10_000;
const RETRY = { baseMs: 250, maxMs: 5_000 };
/** Routes whose meaning does not depend on the phone's state: a copy only repeats a reply. */
const STATELESS = new Set<Route['kind']>([
  'help',
  'status',
  'empty',
  'repo',
  'unknownRepo',
  'repoUsage',
  'planUsage',
  'mediaRefused',
  'imageNotNow',
]);
const CREATES = new Set<Route['kind']>(['start', 'queue']);

class Duplicate extends Error {}

export class InboundHandler {
  private readonly o: InboundOptions;
  /** bounds messages in progress */
  private readonly limit: ReturnType<typeof concurrencyLimit>;
  /** ids this replica has already taken: copies are dropped without a round trip to the API server */
  private readonly recent = new Set<string>();
  private readonly repos: PhoneRepos;

  constructor(options: InboundOptions) {
    this.o = options;
    this.repos =
      options.repos ??
      new PhoneRepos(
        [{ name: nameFromUrl(options.repo.url), baseBranch: DEFAULT_BASE_BRANCH, ...options.repo }],
        new MemoryRepoChoices(),
      );
    this.limit = concurrencyLimit(options.concurrency ?? INBOUND_CONCURRENCY);
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
      await this.o.lanes.run(message.from, () =>
        this.o.outbox.deliver(message.from, [{ text: text.failedToAccept() }]),
      );
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
      const context = { ...this.o.phones.context(message.from), repos: this.repos.names };
      const r =
        given ??
        (message.payload !== undefined
          ? routeTap(message.payload, context, this.o.defaults.maxQueued)
          : routeMessage(message, context, this.o.defaults.maxQueued));
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
        await new Promise((r) =>
          setTimeout(
            r,
            Math.min(backoffDelay(failures, RETRY.baseMs, RETRY.maxMs), Math.max(0, giveUpAt - Date.now())),
          ),
        );
      }
    }
  }

  private async claimAndAct(message: InboundMessage, r: Route): Promise<string | undefined> {
    if (!STATELESS.has(r.kind) && !CREATES.has(r.kind) && !(await this.o.claims.claim(message.id)))
      throw new Duplicate();
    this.o.phones.noteInbound(message.from);
    return this.act(message, r);
  }

  private async act(message: InboundMessage, r: Route): Promise<string | undefined> {
    const phone = message.from;
    const view = this.o.phones.context(phone);
    const log = this.o.logger.child({ phoneHash: phoneHash(phone) });
    log.info({ route: r.kind, transport: message.transport }, 'inbound message');
    switch (r.kind) {
      case 'empty':
        return text.empty();
      case 'help':
        return text.help(await this.repos.summary(phone));
      case 'repo':
      case 'unknownRepo':
      case 'repoUsage':
      case 'planUsage':
        return this.repos.answer(phone, r);
      case 'tooLong':
        return text.tooLong(LIMITS.promptChars);
      case 'nothingPending':
        return text.nothingPending();
      case 'queueFull':
        return text.queueFull(this.o.defaults.maxQueued);
      case 'instructions':
        return text.instructions(r.pending, r.hint);
      case 'stale':
        return text.requestClosed();
      case 'badTap':
        return text.unknownButton();
      case 'status': {
        const shown = view.session ?? view.open[0];
        const repos = await this.repos.summary(phone);
        const spend = this.o.cost && text.spendToday(this.spentToday(phone), this.o.cost.dailyUsd);
        return [
          shown ? text.status(shown, view.open.length - 1, Date.now(), repos !== undefined) : text.idle(),
          repos,
          spend,
        ]
          .filter(Boolean)
          .join('\n');
      }
      case 'cancel': {
        if (!view.open.length) return text.nothingToCancel();
        // Queued ones first: when the active one ends, its queue is already marked as the user's cancel.
        const queuedFirst = [...view.open].sort((a, b) => Number(a === view.session) - Number(b === view.session));
        for (const s of queuedFirst)
          await this.o.sessions.patch(this.o.namespace, s.metadata.name!, { spec: { cancel: true } });
        const first = view.session ?? view.open[0]!;
        return text.cancelling(first.metadata.name!, view.open.length - 1);
      }
      case 'mediaRefused':
        return r.media === 'other'
          ? text.mediaRefused()
          : r.media === 'audio'
            ? text.audioNotSupported()
            : text.stickerRefused();
      case 'imageNotNow':
        return text.imageNotNow();
      case 'start':
      case 'queue': {
        const spent = this.o.cost && this.spentToday(phone);
        if (this.o.cost && !withinDailyBudget(spent!, this.o.cost)) {
          log.info({ spentUsd: spent, budgetUsd: this.o.cost.dailyUsd }, 'command refused: daily budget spent');
          return text.overBudget(spent!, this.o.cost);
        }
        const images = message.media?.length ? await this.keepImages(message) : undefined;
        if (images && 'failure' in images) return text.imageFailed(images.failure, this.o.images?.maxBytes ?? 0);
        const created = await this.create(message, r, r.kind === 'queue', images);
        log.info({ session: created.metadata.name }, 'session created');
        const repo = this.repos.names.length > 1 ? created.metadata.labels?.[LABEL_REPO] : undefined;
        return r.kind === 'start'
          ? text.started(created.metadata.name!, { plan: r.mode === 'plan', repo })
          : text.queued(r.position);
      }
      case 'decide':
        return this.decide(r.session, r.decision, `${message.transport}:${maskPhone(phone)}`);
      case 'diff':
        return askDiff(this.o.sessions, this.o.namespace, view.session, r.file);
    }
  }

  /** The pictures of a new command; none fetched when its Session exists already (a copy: create() answers it). */
  private async keepImages(message: InboundMessage): Promise<Awaited<ReturnType<InboundImages['keep']>> | undefined> {
    if (!this.o.images) return { failure: 'refused' };
    const name = commandSessionName(message.from, message.id);
    if (await this.o.sessions.get(this.o.namespace, name)) return undefined;
    return this.o.images.keep(message, name);
  }

  private spentToday(phone: string): number {
    return spentToday(this.o.phones.sessions(phone), Date.now(), this.o.cost!.timeZone);
  }

  /** One write: the Session, named from the message id, is also the message's idempotency record. */
  private async create(
    message: InboundMessage,
    command: { prompt: string } & CommandOptions,
    queued: boolean,
    images?: SessionImage[],
  ): Promise<Session> {
    const phone = message.from;
    const name = commandSessionName(phone, message.id);
    const made = await this.repos.spec(phone, command.prompt, command, this.o.defaults, this.o.phones);
    const spec: SessionSpec = {
      ...made.spec,
      ...(images?.length ? { images } : {}),
      ...(this.o.cost?.runPauseUsd ? { costPauseUsd: this.o.cost.runPauseUsd } : {}),
    };
    const { repo } = made;
    const annotations: Record<string, string> = {
      [ANNOTATION_DELIVERED]: writeDelivered({ n: 1, seq: 0, started: !queued, queued }),
      [ANNOTATION_RECEIVED_AT]: message.receivedAt ?? new Date().toISOString(),
      ...(this.o.owner ? { [ANNOTATION_ACCEPTED_BY]: this.o.owner } : {}),
    };
    try {
      const session = await this.o.sessions.create(this.o.namespace, name, spec, {
        labels: { [LABEL_PHONE_HASH]: phoneHash(phone), [LABEL_PART_OF]: 'tether', [LABEL_REPO]: repo },
        annotations,
      });
      this.o.phones.remember(session);
      return session;
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      // Created before: by this journal before a restart (answer again), or by a copy elsewhere.
      const existing = await this.o.sessions.get(this.o.namespace, name);
      if (!this.o.owner || existing?.metadata.annotations?.[ANNOTATION_ACCEPTED_BY] !== this.o.owner)
        throw new Duplicate();
      return existing;
    }
  }

  /** Appends the decision with optimistic concurrency; a request already answered is not answered twice. */
  private async decide(name: string, draft: DecisionDraft, by: string): Promise<string | undefined> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const session = await this.o.sessions.get(this.o.namespace, name);
      if (!session || session.status?.pending?.id !== draft.requestId) return text.requestClosed();
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
