// The phone's pull requests in the act stage: which one a new command continues, `prs`, `pr <n>`,
// the *status* line, and the notice words (*fix*, *ignore*, *details*, *merge*) handed to the
// pull request actions (relay/github/actions.ts) behind the PullActions interface.
import { TETHER_BRANCH_PATTERN, type PullRequestRef } from '../../common/session/forge-schema.ts';
import type { Session } from '../../common/session/schema.ts';
import type { PullAction, PullActionOutcome, PullActions, PullRecord, PullRecords } from '../pulls/types.ts';
import { text } from '../text.ts';
import type { PhoneRepos } from './phone-repos.ts';
import type { PhoneView } from './phone-view.ts';

/** The most pull requests `prs` lists. */
export const PRS_LISTED = 10;

export interface PullParts {
  records: PullRecords;
  /** records the phone's Sessions that opened or added to a pull request and are not recorded yet */
  catchUp(sessions: readonly Session[]): Promise<void>;
  /** absent: the install has no GitHub actions wired (the words get a plain "not set up") */
  actions?: PullActions;
}

export interface PullAnswerDeps {
  pulls: PullParts;
  repos: PhoneRepos;
  phones: PhoneView;
  now: () => number;
}

const refOf = (record: PullRecord): PullRequestRef => ({
  number: record.number,
  branch: record.branch,
  url: record.url,
});

export class PullAnswers {
  private readonly d: PullAnswerDeps;

  constructor(deps: PullAnswerDeps) {
    this.d = deps;
  }

  /** The open pull request a new command on `repoName` continues: the phone's current one there. */
  async followed(phone: string, repoName: string): Promise<PullRequestRef | undefined> {
    await this.d.pulls.catchUp(this.d.phones.sessions(phone));
    const record = await this.d.pulls.records.current(phone, repoName);
    return record && new RegExp(TETHER_BRANCH_PATTERN).test(record.branch) ? refOf(record) : undefined;
  }

  /** `prs`: the phone's open pull requests, the current one of each repository marked. */
  async list(phone: string): Promise<string> {
    const open = (await this.recorded(phone)).filter((r) => r.state === 'open');
    if (!open.length) return text.noPulls();
    const currentOf = new Set<string>();
    const lines = open.slice(0, PRS_LISTED).map((r) => {
      const current = !currentOf.has(r.repoName);
      currentOf.add(r.repoName);
      return text.pullLine(r, this.promptOf(phone, r), {
        current,
        repo: this.d.repos.names.length > 1 ? r.repoName : undefined,
      });
    });
    return text.pullList(lines, open.length - lines.length);
  }

  /** `pr <n>`: makes the phone's open pull request #n its current one (in its repository). */
  async choose(phone: string, number: number): Promise<string> {
    const mine = (await this.recorded(phone)).filter((r) => r.number === number);
    const defaultRepo = (await this.d.repos.current(phone)).name;
    const record =
      mine.find((r) => r.repoName === defaultRepo && r.state === 'open') ?? mine.find((r) => r.state === 'open');
    if (!record) return mine[0] ? text.pullNotOpen(number, mine[0].state) : text.pullUnknown(number);
    const chosenAt = new Date(this.d.now()).toISOString();
    await this.d.pulls.records.update(
      record.owner,
      record.repo,
      record.number,
      (current) => current && { ...current, chosenAt },
    );
    return text.pullChosen(record.number, record.url, this.d.repos.names.length > 1 ? record.repoName : undefined);
  }

  /** The *status* line naming the current pull request in the phone's default repository. */
  async statusLine(phone: string): Promise<string | undefined> {
    const repo = await this.d.repos.current(phone);
    const record = (await this.recorded(phone)).find((r) => r.repoName === repo.name && r.state === 'open');
    return record && text.statusPull(record.number, record.url);
  }

  /** *fix*, *ignore*, *details*, *merge*: the actions' outcome, or why the phone may not. */
  async act(phone: string, action: PullAction, noticeId: string | undefined): Promise<PullActionOutcome> {
    if (action === 'merge' && !this.d.repos.people.mayMerge(phone))
      return { kind: 'reply', text: text.mergeNotYours() };
    if (!this.d.pulls.actions) return { kind: 'reply', text: text.pullActionsOff() };
    return this.d.pulls.actions.act(phone, action, noticeId);
  }

  /** The phone's records, the most recently chosen first, its finished Sessions recorded first. */
  private async recorded(phone: string): Promise<PullRecord[]> {
    await this.d.pulls.catchUp(this.d.phones.sessions(phone));
    return this.d.pulls.records.ofPhone(phone);
  }

  /** The command that opened the pull request (its oldest Session still kept), as the phone wrote it. */
  private promptOf(phone: string, record: PullRecord): string | undefined {
    const ofPull = (s: Session) =>
      s.spec.repo.url === record.repoUrl &&
      (s.status?.result?.prNumber === record.number || s.spec.pullRequest?.number === record.number);
    return this.d.phones.sessions(phone).find(ofPull)?.spec.prompt;
  }
}
