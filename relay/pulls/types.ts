// The pull requests Tether opened for phones, as the relay remembers them, and what happens to
// them on GitHub: shared by the records (records.ts), the GitHub webhook and poll (relay/github/),
// and the phone's keywords. Types only.
import type { FixRequest, PullRequestRef } from '../../common/session/forge-schema.ts';

export type PullState = 'open' | 'merged' | 'closed';

/** One message the phone was sent about a pull request; its buttons name it (`<reply>:<id>`). */
export interface PullNotice {
  /** `pr-<8 hex of the record key>-<seq>`: a tap finds its record from it */
  id: string;
  kind: PullEvent['kind'];
  /** the key of the event it tells of (PullEvent.key): a replay after a restart finds it unsent */
  key?: string;
  /** ISO time it was made */
  at: string;
  headSha?: string;
  /** failing check runs (checksFailed): what *fix* hands to the runner */
  checkRuns?: number[];
  /** the review (changesRequested / reviewComments) */
  reviewId?: number;
  /** the longer text *details* sends */
  details?: string;
  /** set once answered: a second answer gets "already …" */
  answered?: 'fix' | 'ignore' | 'merge';
  /** set once the message went out (restart safety: a replayed event does not send it again) */
  sent?: boolean;
}

export interface PullRecord {
  /** GitHub owner and repository name (from the Session's repository URL) */
  owner: string;
  repo: string;
  number: number;
  /** the pull request's web page */
  url: string;
  /** its head branch, tether/<session> */
  branch: string;
  /** the install's short name of the repository, and its URL (the Session's spec.repo.url) */
  repoName: string;
  repoUrl: string;
  /** the phone that asked for it (E.164) */
  phone: string;
  state: PullState;
  /** the head commit last seen (pushed by the runner, or told by GitHub) */
  headSha?: string;
  /** the commit the phone's last Session pushed (result.commit): *merge* merges only that head */
  pushedSha?: string;
  /** when the phone last made it its current one (opened it, continued it, or `pr <n>`): ISO */
  chosenAt: string;
  /** a fix was asked: the phone hears when checks pass on a later head */
  fixing?: { headSha: string; since: string };
  /** the latest notices, oldest first (at most PULL_NOTICES_KEPT) */
  notices: PullNotice[];
  /** the events already acted on (their keys' digests, keys.ts), at most PULL_SEEN_KEPT */
  seen: string[];
  /** the poll's conditional-request state (relay/github/poll.ts) */
  poll?: Record<string, string>;
}

export const PULL_NOTICES_KEPT = 10;
export const PULL_SEEN_KEPT = 128;

/** What GitHub told (by webhook or poll), reduced to what the phone hears of. */
export type PullEvent = { owner: string; repo: string; number: number; key: string } & (
  | { kind: 'checksFailed'; headSha: string; checks: Array<{ id: number; name: string; excerpt: string }> }
  | { kind: 'checksPassed'; headSha: string }
  | {
      kind: 'changesRequested' | 'reviewComments';
      headSha: string;
      reviewId: number;
      reviewer: string;
      gist: string;
      comments: number;
    }
  | { kind: 'merged'; by?: string }
  | { kind: 'closed'; by?: string }
  | { kind: 'headMoved'; headSha: string }
);

export interface PullRecords {
  /** one pull request's record */
  get(owner: string, repo: string, number: number): Promise<PullRecord | undefined>;
  /** the phone's records, the most recently chosen first */
  ofPhone(phone: string): Promise<PullRecord[]>;
  /** the phone's current pull request in a repository: the open one chosen last */
  current(phone: string, repoName: string): Promise<PullRecord | undefined>;
  /** every open record (the poll) */
  open(): Promise<PullRecord[]>;
  /** the record a notice id names */
  byNotice(noticeId: string): Promise<PullRecord | undefined>;
  /** read-modify-write of one record (retried on conflict); undefined from `change` deletes it */
  update(
    owner: string,
    repo: string,
    number: number,
    change: (current: PullRecord | undefined) => PullRecord | undefined,
  ): Promise<PullRecord | undefined>;
}

/** A quick reply on a pull request notice, or the same word typed. */
export type PullAction = 'fix' | 'ignore' | 'details' | 'merge';

export type PullActionOutcome =
  | { kind: 'reply'; text: string }
  /** start (or queue) a command as if typed, on the pull request's branch */
  | { kind: 'command'; prompt: string; repo: string; pullRequest: PullRequestRef; fix?: FixRequest };

/** Answers *fix*, *ignore*, *details*, *merge* (relay/github/actions.ts). */
export interface PullActions {
  act(phone: string, action: PullAction, noticeId: string | undefined): Promise<PullActionOutcome>;
}
