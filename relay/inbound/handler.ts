// The inbound pipeline after the acknowledgement. Every message takes one path:
//   receive → record   (intake.ts, before the webhook is acknowledged)
//   route → claim → act → reply   (handle() below, in the phone's lane)
// with one de-duplication rule (once.ts) and the journal kept until the reply is sent.
import type { Logger } from 'pino';
import { concurrencyLimit } from '../../common/concurrency.ts';
import { backoffDelay } from '../../common/kube/work-queue.ts';
import type { PhoneHash } from '../../common/session/phone-hash.ts';
import type { SessionDefaults } from '../../common/session/defaults.ts';
import type { SessionSpec } from '../../common/session/schema.ts';
import type { CostBudget } from '../../common/session/budget.ts';
import { INBOUND_CONCURRENCY } from '../defaults.ts';
import { installRepo } from '../repo-list.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { Outbox } from '../outbound/outbox.ts';
import type { PhoneLanes } from '../phone-lane.ts';
import type { SessionApi } from '../session-store.ts';
import { text } from '../text.ts';
import { Actions } from './act.ts';
import type { MessageClaims } from './claims.ts';
import { routeMessage, type InboundImages } from './media-in.ts';
import type { InboundMessage } from './message.ts';
import { Duplicate, Once } from './once.ts';
import type { PhoneView } from './phone-view.ts';
import { MemoryRepoChoices } from './repo-choices.ts';
import { PhoneRepos } from './phone-repos.ts';
import { PullAnswers, type PullParts } from './pull-answers.ts';
import type { Route } from './router.ts';
import { routeTap } from './tap.ts';

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
  /** the install's keyed phone hash: Session names and labels, log lines */
  phoneHash: PhoneHash;
  /** messages processed at once (default INBOUND_CONCURRENCY) */
  concurrency?: number;
  /** this relay's journal identity, written on the Sessions it creates (default: none) */
  owner?: string;
  /** the de-duplication rule, shared with the intake (default: one of its own over `claims` and `owner`) */
  once?: Once;
  /** keeps a message's route, so that a replay after a crash acts on the same request */
  onRouted?(id: string, route: Route): Promise<void>;
  /** how long a failing API call is retried before the user is asked to send again (default 60 s) */
  retryForMs?: number;
  /** fetches and keeps pictures sent with a command; absent → a picture gets a plain refusal */
  images?: InboundImages;
  /** the per-phone daily model budget (default: none) */
  cost?: CostBudget;
  /** the clock, epoch ms (default Date.now) */
  now?: () => number;
  /** the phone's pull requests (records, and the notice words' actions); absent: every command from the base */
  pulls?: PullParts;
}

export type InboundOutcome = 'duplicate' | Route['kind'];

const RETRY = { baseMs: 250, maxMs: 5_000 };
const DUPLICATE = Symbol('duplicate');

export class InboundHandler {
  readonly once: Once;
  private readonly o: InboundOptions;
  /** bounds messages in progress */
  private readonly limit: ReturnType<typeof concurrencyLimit>;
  private readonly repos: PhoneRepos;
  private readonly actions: Actions;
  private readonly now: () => number;

  constructor(options: InboundOptions) {
    this.o = options;
    this.now = options.now ?? Date.now;
    this.once = options.once ?? new Once(options.claims, options.owner);
    this.repos =
      options.repos ?? new PhoneRepos([installRepo(options.repo)], new MemoryRepoChoices(), options.phoneHash);
    this.limit = concurrencyLimit(options.concurrency ?? INBOUND_CONCURRENCY);
    const pullAnswers =
      options.pulls &&
      new PullAnswers({ pulls: options.pulls, repos: this.repos, phones: options.phones, now: this.now });
    this.actions = new Actions({ ...options, repos: this.repos, once: this.once, now: this.now, pullAnswers });
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
      this.o.logger.error(
        { phoneHash: this.o.phoneHash(message.from), err: error },
        'could not act on an inbound message',
      );
      await this.o.lanes.run(message.from, () =>
        this.o.outbox.deliver(message.from, [{ text: text.failedToAccept() }]),
      );
      return 'failed';
    }
  }

  /**
   * route → claim → act → reply: the stages after receive → record (intake.ts). The phone's lane is
   * taken before any round trip, so its messages are acted on in arrival order. Resolves once the
   * message has been acted on and its reply sent.
   */
  async handle(message: InboundMessage, given?: Route): Promise<InboundOutcome> {
    return this.o.lanes.run(message.from, async () => {
      const route = given ?? (await this.route(message));
      const reply = await this.retrying(async () => {
        if (!(await this.once.claim(message.id, route))) return DUPLICATE;
        this.o.phones.noteInbound(message.from, this.now());
        return this.act(message, route);
      });
      if (reply === DUPLICATE) return this.duplicate();
      if (reply) await this.o.outbox.deliver(message.from, [{ text: reply }]);
      return route.kind;
    });
  }

  /** What the message means given the phone's Sessions; journaled, so a replay acts on the same request. */
  private async route(message: InboundMessage): Promise<Route> {
    const context = { ...this.o.phones.context(message.from), repos: this.repos.names };
    const route =
      message.payload !== undefined
        ? routeTap(message.payload, context, this.o.defaults.maxQueued)
        : routeMessage(message, context, this.o.defaults.maxQueued);
    await this.o.onRouted?.(message.id, route);
    return route;
  }

  /** The act stage; a command whose Session turns out to be a copy's record is a duplicate (once.ts). */
  private async act(message: InboundMessage, route: Route): Promise<string | undefined | typeof DUPLICATE> {
    try {
      return await this.actions.act(message, route);
    } catch (error) {
      if (error instanceof Duplicate) return DUPLICATE;
      throw error;
    }
  }

  private duplicate(): 'duplicate' {
    this.o.metrics.duplicates.inc();
    return 'duplicate';
  }

  /** Runs `task` until it succeeds or the retry window has passed. */
  private async retrying<T>(task: () => Promise<T>): Promise<T> {
    const giveUpAt = this.now() + (this.o.retryForMs ?? 60_000);
    for (let failures = 0; ; failures++) {
      try {
        return await task();
      } catch (error) {
        if (this.now() >= giveUpAt) throw error;
        this.o.logger.warn({ err: error, failures }, 'inbound message: API call failed; retrying');
        const wait = Math.min(backoffDelay(failures, RETRY.baseMs, RETRY.maxMs), Math.max(0, giveUpAt - this.now()));
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }
}
