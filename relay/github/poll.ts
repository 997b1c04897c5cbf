// The webhook's stand-in when GitHub cannot reach the relay: every TETHER_GITHUB_POLL_SECONDS, up to
// TETHER_GITHUB_POLL_MAX open records (round-robin), each read with ETags — the pull request, its
// head's check runs, its reviews — into the PullEvents the webhook makes. Event keys make webhook
// and poll together act once; an unchanged pull request costs three 304s and no write.
import type { Logger } from '../../common/log.ts';
import { hasSeen } from '../pulls/keys.ts';
import type { PullEvent, PullRecord, PullRecords } from '../pulls/types.ts';
import { GitHubError, type GitHubClient } from './client.ts';
import { checkEvents, pullEvents, reviewEvents } from './poll-events.ts';
import { readCheckRuns, readPull, readReviews, reviewCommentCount, type PullRef } from './reads.ts';

/** Acts on one event (the webhook's handler); the poll moves on only once it resolved. */
export type PullEventSink = (event: PullEvent) => Promise<unknown>;

export interface PollSettings {
  intervalMs: number;
  maxPerRound: number;
}

export interface PollRound {
  polled: number;
  requests: number;
  notModified: number;
  events: number;
  failures: Array<{ pull: string; error: string }>;
  /** set when GitHub's rate limit ended the round early */
  rateLimited?: string;
}

/** What `record.poll` holds: the ETags of the last answers and the head they were about. */
interface PollState {
  pull?: string;
  head?: string;
  checks?: string;
  checksHead?: string;
  reviews?: string;
}

const recordName = (r: PullRef) => `${r.owner}/${r.repo}#${r.number}`;

/** An ETag or sha as a header may carry it: anything else in the record (a hand edit) is dropped. */
const HEADER_VALUE = /^[\x21-\x7e]{1,200}$/;
const pollStateOf = (stored: PullRecord['poll']): PollState =>
  Object.fromEntries(
    Object.entries(stored ?? {}).filter(([, value]) => typeof value === 'string' && HEADER_VALUE.test(value)),
  );

export class GitHubPoll {
  /** the record polled last: the next round starts after it */
  private cursor = '';
  private pausedUntil = 0;

  private readonly client: GitHubClient;
  private readonly records: PullRecords;
  private readonly onEvent: PullEventSink;
  private readonly settings: PollSettings;
  private readonly now: () => number;

  constructor(parts: {
    client: GitHubClient;
    records: PullRecords;
    onEvent: PullEventSink;
    settings: PollSettings;
    now?: () => number;
  }) {
    this.client = parts.client;
    this.records = parts.records;
    this.onEvent = parts.onEvent;
    this.settings = parts.settings;
    this.now = parts.now ?? Date.now;
  }

  /** One bounded round over the open records after the cursor. */
  async round(): Promise<PollRound> {
    const round: PollRound = { polled: 0, requests: 0, notModified: 0, events: 0, failures: [] };
    if (this.now() < this.pausedUntil) return round;
    for (const record of this.nextRecords(await this.records.open())) {
      this.cursor = recordName(record);
      round.polled += 1;
      try {
        await this.pollOne(record, round);
      } catch (error) {
        if (!(error instanceof GitHubError)) throw error;
        round.failures.push({ pull: this.cursor, error: error.message });
        if (error.rateLimitedUntil) {
          this.pausedUntil = error.rateLimitedUntil;
          round.rateLimited = error.message;
          break;
        }
      }
    }
    return round;
  }

  /** Rounds every intervalMs, one at a time, until stopped; each round's outcome is logged. */
  start(log: Logger): { stop(): Promise<void> } {
    let timer: NodeJS.Timeout | undefined;
    let running: Promise<void> = Promise.resolve();
    let stopped = false;
    const tick = () => {
      running = this.round()
        .then((round) => reportRound(log, round))
        .catch((error: unknown) => log.error({ err: error }, 'the GitHub poll round failed'))
        .finally(() => {
          if (!stopped) timer = setTimeout(tick, this.settings.intervalMs);
        });
    };
    timer = setTimeout(tick, this.settings.intervalMs);
    return {
      stop: async () => {
        stopped = true;
        clearTimeout(timer);
        await running;
      },
    };
  }

  private nextRecords(open: PullRecord[]): PullRecord[] {
    const sorted = [...open].sort((a, b) => recordName(a).localeCompare(recordName(b)));
    const start = sorted.findIndex((r) => recordName(r).localeCompare(this.cursor) > 0);
    const rotated = start < 0 ? sorted : [...sorted.slice(start), ...sorted.slice(0, start)];
    return rotated.slice(0, this.settings.maxPerRound);
  }

  private async pollOne(record: PullRecord, round: PollRound): Promise<void> {
    const ref: PullRef = { owner: record.owner, repo: record.repo, number: record.number };
    const state = pollStateOf(record.poll);
    const next: PollState = { ...state };
    const seen = { has: (key: string) => hasSeen(record, key) };
    const events: PullEvent[] = [];
    const count = (changed: boolean) => {
      round.requests += 1;
      if (!changed) round.notModified += 1;
    };

    const pull = await readPull(this.client, ref, state.pull);
    count(pull.changed);
    if (pull.changed) {
      Object.assign(next, { pull: pull.etag, head: pull.body.head.sha });
      events.push(...pullEvents(ref, pull.body, record.headSha));
    }
    const head = next.head;
    const ended = events.some((e) => e.kind === 'merged' || e.kind === 'closed');
    if (head && !ended) {
      const sameHead = state.checksHead === head;
      const runs = await readCheckRuns(this.client, ref, head, sameHead ? state.checks : undefined);
      count(runs.changed);
      if (runs.changed) {
        Object.assign(next, { checks: runs.etag, checksHead: head });
        events.push(...checkEvents(ref, head, runs.body));
      }
      const reviews = await readReviews(this.client, ref, state.reviews);
      count(reviews.changed);
      if (reviews.changed) {
        next.reviews = reviews.etag;
        const counted = (id: number) => (count(true), reviewCommentCount(this.client, ref, id));
        events.push(...(await reviewEvents(ref, reviews.body, seen, counted)));
      }
    }
    for (const event of events.filter((e) => !seen.has(e.key))) {
      await this.onEvent(event);
      round.events += 1;
    }
    if (JSON.stringify(next) !== JSON.stringify(state)) await this.savePollState(ref, next);
  }

  private async savePollState(ref: PullRef, state: PollState): Promise<void> {
    const poll = Object.fromEntries(Object.entries(state).filter(([, v]) => typeof v === 'string')) as Record<
      string,
      string
    >;
    await this.records.update(ref.owner, ref.repo, ref.number, (current) => current && { ...current, poll });
  }
}

function reportRound(log: Logger, round: PollRound): void {
  for (const failure of round.failures) log.warn(failure, 'GitHub poll: could not read a pull request');
  const { failures, ...figures } = round;
  log.debug({ ...figures, failed: failures.length }, 'GitHub poll round');
}
