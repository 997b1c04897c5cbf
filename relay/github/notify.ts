// Acts on one PullEvent, from the webhook or the poll: finds Tether's record of the pull request
// (none: not a pull request Tether opened, and no phone hears of it), applies the event to it once
// (notices.ts), and sends the notice to the record's phone through the outbox, in the phone's lane.
// A notice is marked sent after it went out; a replay after a restart sends one that was not.
import type { Logger } from 'pino';
import type { Redactor } from '../../common/log.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { Outbox } from '../outbound/outbox.ts';
import type { PhoneLanes } from '../phone-lane.ts';
import { hasSeen } from '../pulls/keys.ts';
import type { PullEvent, PullRecords } from '../pulls/types.ts';
import { applyEvent, markSent, noticeMessage, type Applied, type EventOutcome } from './notices.ts';

export interface NotifierOptions {
  records: PullRecords;
  outbox: Pick<Outbox, 'deliver'>;
  lanes: Pick<PhoneLanes, 'run'>;
  /** whether the relay may message this phone (the allowlist, the web chat's phone) */
  isRecipient(phone: string): boolean;
  /** secrets GitHub's text may carry (token-shaped strings are redacted regardless) */
  redact: Redactor;
  metrics: RelayMetrics;
  logger: Logger;
  now?: () => number;
  /** a review's line comments, read from GitHub (the webhook's payload has no count); absent: no token */
  countComments?: (event: PullEvent, reviewId: number) => Promise<number>;
}

export type NotifyOutcome = EventOutcome | 'notOurs' | 'notRecipient' | 'empty';

/**
 * How an event comes: the first time; again after this process failed to act on it (only a notice
 * this process recorded and did not send is sent: another replica may be sending one it recorded);
 * or from the journal after a restart (a notice recorded and not marked sent is sent).
 */
export type Attempt = 'first' | 'retry' | 'restart';

export class PullNotifier {
  private readonly o: NotifierOptions;
  private readonly now: () => number;
  /** notices this process recorded and has not sent yet: the only ones a retry sends */
  private readonly recordedHere = new Set<string>();

  constructor(options: NotifierOptions) {
    this.o = options;
    this.now = options.now ?? Date.now;
  }

  /**
   * Acts on the event once. `replay`: it comes from this relay's own journal after a restart, so a
   * notice its first run made and did not send is sent now.
   */
  async notify(event: PullEvent, attempt: Attempt = 'first'): Promise<NotifyOutcome> {
    const outcome = await this.act(event, attempt);
    this.o.metrics.githubEvents.inc({ kind: event.kind, outcome });
    const level = outcome === 'told' || outcome === 'recorded' || outcome === 'notOurs' ? 'info' : 'debug';
    this.o.logger[outcome === 'notRecipient' ? 'warn' : level](
      { owner: event.owner, repo: event.repo, number: event.number, kind: event.kind, key: event.key, outcome },
      outcome === 'notOurs' ? 'GitHub event for a pull request Tether did not open: ignored' : 'GitHub event',
    );
    return outcome;
  }

  private async act(received: PullEvent, attempt: Attempt): Promise<NotifyOutcome> {
    const replay = attempt !== 'first';
    const { owner, repo, number } = received;
    const before = await this.o.records.get(owner, repo, number);
    if (!before) return 'notOurs';
    if (hasSeen(before, received.key) && !replay) return 'seen';
    const event = await this.counted(received);
    if (!event) return 'empty';
    const at = new Date(this.now()).toISOString();
    let applied: Applied | undefined;
    const after = await this.o.records.update(owner, repo, number, (current) => {
      applied = current && applyEvent(current, event, at, this.o.redact);
      return applied?.record ?? current;
    });
    if (!after || !applied) return 'notOurs';
    const { notice } = applied;
    if (notice && applied.outcome === 'told') this.recordedHere.add(notice.id);
    const mine = attempt === 'restart' || (notice !== undefined && this.recordedHere.has(notice.id));
    const unsent = notice && !notice.sent && mine ? notice : undefined;
    if (!unsent) return applied.outcome;
    if (!this.o.isRecipient(after.phone)) return 'notRecipient';
    const part = noticeMessage(after, event, unsent, this.o.redact);
    await this.o.lanes.run(after.phone, () => this.o.outbox.deliver(after.phone, [part]));
    this.recordedHere.delete(unsent.id);
    await this.o.records.update(owner, repo, number, (current) => current && markSent(current, unsent.id));
    return 'told';
  }

  /** A review with its line comments counted (when GitHub can be read); undefined: a comment with nothing in it. */
  private async counted(event: PullEvent): Promise<PullEvent | undefined> {
    if (event.kind !== 'changesRequested' && event.kind !== 'reviewComments') return event;
    const comments =
      event.comments || !this.o.countComments ? event.comments : await this.o.countComments(event, event.reviewId);
    if (event.kind === 'reviewComments' && !comments && !event.gist) return undefined;
    return { ...event, comments };
  }
}
