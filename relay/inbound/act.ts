// The act stage: what a routed, claimed message does (create, cancel, answer, ask for a diff) and the
// text of its reply. Writes go to the Session; conflicting writes are read again (retryOnConflict).
import type { Logger } from 'pino';
import { done, retryOnConflict } from '../../common/kube/retry.ts';
import { spentToday, withinDailyBudget } from '../../common/session/budget.ts';
import { maskPhone } from '../../common/session/display.ts';
import { LIMITS, type Session } from '../../common/session/schema.ts';
import { sentToPhone } from '../delivered-state.ts';
import { text } from '../text.ts';
import { askDiff } from './diff-request.ts';
import type { InboundMessage } from './message.ts';
import { NewSessions, type NewSessionDeps } from './new-session.ts';
import { commandRoute, type DecisionDraft, type Route } from './router.ts';

export interface ActDeps extends NewSessionDeps {
  logger: Logger;
}

type Command = Extract<Route, { kind: 'start' | 'queue' }>;

/** The reply of a route that changes nothing and reads nothing but the route. */
function plainReply(r: Route, maxQueued: number): string | undefined {
  switch (r.kind) {
    case 'empty':
      return text.empty();
    case 'tooLong':
      return text.tooLong(LIMITS.promptChars);
    case 'nothingPending':
      return text.nothingPending();
    case 'queueFull':
      return text.queueFull(maxQueued);
    case 'instructions':
      return text.instructions(r.pending, r.hint);
    case 'stale':
      return text.requestClosed();
    case 'badTap':
      return text.unknownButton();
    case 'imageNotNow':
      return text.imageNotNow();
    case 'newUsage':
      return text.newUsage();
    case 'mediaRefused':
      if (r.media === 'audio') return text.audioNotSupported();
      return r.media === 'sticker' ? text.stickerRefused() : text.mediaRefused();
    default:
      return undefined;
  }
}

export class Actions {
  private readonly d: ActDeps;
  private readonly created: NewSessions;

  constructor(deps: ActDeps) {
    this.d = deps;
    this.created = new NewSessions(deps);
  }

  /** Acts on one message; resolves to its reply (undefined: the outbound side answers). */
  async act(message: InboundMessage, r: Route): Promise<string | undefined> {
    const phone = message.from;
    const log = this.d.logger.child({ phoneHash: this.d.phoneHash(phone) });
    log.info({ route: r.kind, transport: message.transport }, 'inbound message');
    switch (r.kind) {
      case 'help':
        return text.help(await this.d.repos.summary(phone));
      case 'repo':
      case 'unknownRepo':
      case 'repoUsage':
      case 'planUsage':
        return this.d.repos.answer(phone, r);
      case 'status':
        return this.status(phone);
      case 'cancel':
        return this.cancel(phone);
      case 'start':
      case 'queue':
        return this.command(message, r, log);
      case 'decide':
        return this.decide(r.session, r.decision, `${message.transport}:${maskPhone(phone)}`);
      case 'diff':
        return askDiff(this.d.sessions, this.d.namespace, this.d.phones.context(phone).session, r.file);
      case 'prs':
        return this.d.pullAnswers ? this.d.pullAnswers.list(phone) : text.noPulls();
      case 'pr':
        return this.d.pullAnswers ? this.d.pullAnswers.choose(phone, r.number) : text.pullUnknown(r.number);
      case 'pull':
        return this.pull(message, r, log);
      default:
        return plainReply(r, this.d.defaults.maxQueued);
    }
  }

  private async status(phone: string): Promise<string> {
    const view = this.d.phones.context(phone);
    const shown = view.session ?? view.open[0];
    const repos = await this.d.repos.summary(phone);
    const spend = this.d.cost && text.spendToday(this.spentToday(phone), this.d.cost.dailyUsd);
    const now = this.d.now();
    const pull = await this.d.pullAnswers?.statusLine(phone);
    const session = shown ? text.status(shown, view.open.length - 1, now, repos !== undefined) : text.idle();
    return [session, pull, repos, spend].filter(Boolean).join('\n');
  }

  private async cancel(phone: string): Promise<string> {
    const view = this.d.phones.context(phone);
    if (!view.open.length) return text.nothingToCancel();
    // Queued ones first: when the active one ends, its queue is already marked as the user's cancel.
    const queuedFirst = [...view.open].sort((a, b) => Number(a === view.session) - Number(b === view.session));
    for (const s of queuedFirst)
      await this.d.sessions.patch(this.d.namespace, s.metadata.name!, { spec: { cancel: true } });
    const first = view.session ?? view.open[0]!;
    return text.cancelling(first.metadata.name!, view.open.length - 1);
  }

  private async command(message: InboundMessage, r: Command, log: Logger): Promise<string> {
    const cost = this.d.cost;
    const spent = cost && this.spentToday(message.from);
    if (cost && !withinDailyBudget(spent!, cost)) {
      log.info({ spentUsd: spent, budgetUsd: cost.dailyUsd }, 'command refused: daily budget spent');
      return text.overBudget(spent!, cost);
    }
    const made = await this.created.create(message, r);
    if ('failure' in made) return text.imageFailed(made.failure, this.d.images?.maxBytes ?? 0);
    if ('notYours' in made) return this.d.repos.notYours(message.from, made.notYours);
    const pr = made.pullRequest?.number;
    log.info({ session: made.session.metadata.name, pr }, 'session created');
    if (r.kind === 'queue') return text.queued(r.position, pr);
    const from = r.fresh ? made.session.spec.repo.baseBranch : undefined;
    return text.started(made.session.metadata.name!, { plan: r.mode === 'plan', repo: made.repo, pr, from });
  }

  /** *fix*, *ignore*, *details*, *merge*: a reply, or a command started or queued as if typed. */
  private async pull(message: InboundMessage, r: Extract<Route, { kind: 'pull' }>, log: Logger): Promise<string> {
    if (!this.d.pullAnswers) return text.pullActionsOff();
    const outcome = await this.d.pullAnswers.act(message.from, r.action, r.noticeId);
    log.info({ action: r.action, outcome: outcome.kind }, 'pull request action');
    if (outcome.kind === 'reply') return outcome.text;
    if (!this.d.repos.names.includes(outcome.repo)) return text.repoGone(outcome.repo);
    const options = {
      repo: outcome.repo,
      pullRequest: outcome.pullRequest,
      ...(outcome.fix ? { fix: outcome.fix } : {}),
    };
    const routed = commandRoute(
      outcome.prompt,
      options,
      this.d.phones.context(message.from),
      this.d.defaults.maxQueued,
    );
    if (routed.kind !== 'start' && routed.kind !== 'queue') return plainReply(routed, this.d.defaults.maxQueued)!;
    return this.command(message, routed, log);
  }

  private spentToday(phone: string): number {
    return spentToday(this.d.phones.sessions(phone), this.d.now(), this.d.cost!.timeZone);
  }

  /** Appends the decision with optimistic concurrency; a request already answered is not answered twice. */
  private decide(name: string, draft: DecisionDraft, by: string): Promise<string | undefined> {
    const { sessions, namespace } = this.d;
    return retryOnConflict(
      () => sessions.get(namespace, name),
      (session: Session | undefined) => {
        if (!session || session.status?.pending?.id !== draft.requestId) return done(text.requestClosed());
        // Words meant for the request before (a tool's "allow always") must not grant a host the phone has not seen.
        if (session.status.pending.kind === 'egress' && !sentToPhone(session, draft.requestId))
          return done(text.requestOnItsWay());
        const decisions = session.spec.decisions ?? [];
        if (decisions.some((d) => d.requestId === draft.requestId)) return done('That request was already answered.');
        return [...decisions, { ...draft, by, at: new Date(this.d.now()).toISOString() }];
      },
      async (decisions, session) => {
        await sessions.patch(namespace, name, {
          metadata: { resourceVersion: session!.metadata.resourceVersion },
          spec: { decisions },
        });
        return undefined;
      },
    );
  }
}
