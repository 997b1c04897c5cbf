// The phone's answers to a pull request notice: *fix* (a command on the pull request's branch,
// carrying what to fix), *ignore*, *details*, and *merge* (left to the Merger). Tapped, the answer
// names its notice; typed, it applies to the newest unanswered notice of the phone's current pull
// request. A notice is answered once, and only by the phone it was sent to.
import type { FixRequest } from '../../common/session/forge-schema.ts';
import { FIX_CHECK_RUNS_MAX } from '../../common/session/forge-schema.ts';
import { pullText } from '../pull-text.ts';
import type {
  PullAction,
  PullActionOutcome,
  PullActions,
  PullNotice,
  PullRecord,
  PullRecords,
} from '../pulls/types.ts';

/** One entry of the install's people map (TETHER_PEOPLE). */
export interface Person {
  phone: string;
  name: string;
  email?: string;
  github?: string;
  /** short names of the repositories the person may use; absent: all */
  repos?: string[];
  /** may merge from the phone */
  merge?: boolean;
}

/** Merges a pull request when the install, the person and GitHub allow it; the reply says what happened. */
export interface Merger {
  merge(record: PullRecord, person: Person | undefined): Promise<string>;
}

export interface ActionsOptions {
  records: PullRecords;
  /** absent: merging from the phone is off (github.merge: never) */
  merger?: Merger;
  personOf?(phone: string): Person | undefined;
  now?: () => number;
}

/** The notices that ask for an answer (they carry *fix* / *ignore* / *details*). */
const ASKING = new Set<PullNotice['kind']>(['checksFailed', 'changesRequested', 'reviewComments']);

type Found = { record: PullRecord; notice?: PullNotice } | { reply: string };
const reply = (text: string): PullActionOutcome => ({ kind: 'reply', text });

export class GithubPullActions implements PullActions {
  private readonly o: ActionsOptions;
  private readonly now: () => number;

  constructor(options: ActionsOptions) {
    this.o = options;
    this.now = options.now ?? Date.now;
  }

  async act(phone: string, action: PullAction, noticeId: string | undefined): Promise<PullActionOutcome> {
    const found = noticeId ? await this.tapped(phone, noticeId) : await this.typed(phone, action);
    if ('reply' in found) return reply(found.reply);
    const { record, notice } = found;
    if (record.state !== 'open') return reply(pullText.notOpen(record.number, record.state));
    if (action === 'merge') return reply(await this.merge(phone, record));
    if (!notice) return reply(pullText.noNotice());
    if (action === 'details') return reply(notice.details ?? pullText.noDetails(record.number));
    if (!ASKING.has(notice.kind) || !notice.headSha) return reply(pullText.nothingToFix(record.number));
    return this.answer(record, notice, action);
  }

  /** The notice a tap names: it must exist and be this phone's. */
  private async tapped(phone: string, noticeId: string): Promise<Found> {
    const record = await this.o.records.byNotice(noticeId);
    const notice = record?.notices.find((n) => n.id === noticeId);
    return record && notice && record.phone === phone ? { record, notice } : { reply: pullText.noticeGone() };
  }

  /** The phone's current pull request (the open one chosen last) and its newest unanswered notice. */
  private async typed(phone: string, action: PullAction): Promise<Found> {
    const record = (await this.o.records.ofPhone(phone)).find((r) => r.state === 'open');
    if (!record) return { reply: pullText.noPull() };
    if (action === 'merge') return { record };
    const notice = record.notices.findLast((n) => ASKING.has(n.kind) && !n.answered);
    return notice ? { record, notice } : { reply: pullText.noNotice() };
  }

  private merge(phone: string, record: PullRecord): Promise<string> | string {
    return this.o.merger ? this.o.merger.merge(record, this.o.personOf?.(phone)) : pullText.mergeOff();
  }

  /** Marks the notice answered (once: a second answer, even a concurrent one, is told it was). */
  private async answer(record: PullRecord, notice: PullNotice, action: 'fix' | 'ignore'): Promise<PullActionOutcome> {
    const since = new Date(this.now()).toISOString();
    let earlier: PullNotice['answered'];
    await this.o.records.update(record.owner, record.repo, record.number, (current) => {
      const mine = current?.notices.find((n) => n.id === notice.id);
      earlier = mine?.answered;
      if (!current || !mine || earlier) return current;
      const notices = current.notices.map((n) => (n.id === notice.id ? { ...n, answered: action } : n));
      const fixing = action === 'fix' ? { headSha: notice.headSha!, since } : current.fixing;
      return { ...current, notices, fixing };
    });
    if (earlier) return reply(pullText.alreadyAnswered(record.number, earlier));
    if (action === 'ignore') return reply(pullText.ignored(record.number));
    const fix = fixOf(notice);
    return {
      kind: 'command',
      prompt: pullText.fixPrompt(record.number, fix.kind),
      repo: record.repoName,
      pullRequest: { number: record.number, branch: record.branch, url: record.url },
      fix,
    };
  }
}

function fixOf(notice: PullNotice): FixRequest {
  if (notice.kind === 'checksFailed')
    return {
      kind: 'checks',
      headSha: notice.headSha!,
      checkRuns: (notice.checkRuns ?? []).slice(0, FIX_CHECK_RUNS_MAX),
    };
  return { kind: 'review', headSha: notice.headSha!, ...(notice.reviewId ? { reviewId: notice.reviewId } : {}) };
}
