// *merge* from the phone (when TETHER_GITHUB_MERGE is whenGreen): allowed by the person (the people
// list's `merge`), on an open pull request whose head's check runs all completed green, whose
// head's commit statuses (the older Statuses API) are none or all success, and that GitHub finds
// mergeable — then `PUT …/merge` with that head's sha, in the repository's default
// method, and the record is marked merged (the webhook's "merged" then tells nothing twice).
// Otherwise one line saying why.
import { maskPhone } from '../../common/session/display.ts';
import type { PullRecord, PullRecords } from '../pulls/types.ts';
import type { Merger, Person } from './actions.ts';
import { GitHubError, type GitHubClient } from './client.ts';
import { MERGE_TEXT } from './merge-text.ts';
import {
  isGreen,
  pullPath,
  readCheckRuns,
  readCombinedStatus,
  readPull,
  type GitHubCheckRun,
  type GitHubCombinedStatus,
  type GitHubPull,
  type PullRef,
} from './reads.ts';

export type MergeSetting = 'never' | 'whenGreen';

/** The install's Merger: none when merging from the phone is off (or there is no token to merge with). */
export const mergerFor = (setting: MergeSetting, client: GitHubClient | undefined, records: PullRecords) =>
  setting === 'whenGreen' && client ? new GitHubMerger(client, records) : undefined;

/** The install's people list as *merge* needs it (relay/inbound/people.ts). */
interface MergePeople {
  mayMerge(phone: string): boolean;
  requester(phone: string): { name: string } | undefined;
}

/**
 * GithubPullActions' `personOf` for the Merger: every phone gets its rights from the people list
 * (a phone the list leaves out may not merge; no list: every allowed phone may).
 */
export const mergeRightsOf =
  (people: MergePeople) =>
  (phone: string): Person => ({
    phone,
    name: people.requester(phone)?.name ?? maskPhone(phone),
    merge: people.mayMerge(phone),
  });

export class GitHubMerger implements Merger {
  private readonly client: GitHubClient;
  private readonly records: PullRecords;

  constructor(client: GitHubClient, records: PullRecords) {
    this.client = client;
    this.records = records;
  }

  async merge(record: PullRecord, person: Pick<Person, 'name' | 'merge'> | undefined): Promise<string> {
    if (person && !person.merge) return MERGE_TEXT.notAllowed(person.name);
    const ref: PullRef = { owner: record.owner, repo: record.repo, number: record.number };
    try {
      return await this.mergeIfGreen(ref, record);
    } catch (error) {
      if (error instanceof GitHubError) return MERGE_TEXT.unreachable(ref.number, error.message);
      throw error;
    }
  }

  private async mergeIfGreen(ref: PullRef, record: PullRecord): Promise<string> {
    const read = await readPull(this.client, ref);
    if (!read.changed) throw new GitHubError('GitHub answered 304 to an unconditional read');
    const pull = read.body;
    const runs = await readCheckRuns(this.client, ref, pull.head.sha);
    const combined = await readCombinedStatus(this.client, ref, pull.head.sha);
    const statuses = statusChecks(combined.changed ? combined.body : undefined);
    const reason = whyNot(ref.number, pull, runs.changed ? runs.body : [], statuses) ?? notPushed(record, pull);
    if (reason) return reason;
    let merged: { merged?: boolean; sha?: string; message?: string };
    try {
      merged = await this.client.put(`${pullPath(ref)}/merge`, { sha: pull.head.sha });
    } catch (error) {
      if (!(error instanceof GitHubError)) throw error;
      if (error.status === 409) return MERGE_TEXT.headMoved(ref.number);
      if (error.status === 405 || error.status === 403 || error.status === 422)
        return MERGE_TEXT.refused(ref.number, error.message.replace(/^.*?\(\d{3}\):\s*/, ''));
      throw error;
    }
    if (merged.merged === false) return MERGE_TEXT.refused(ref.number, merged.message ?? 'no reason given');
    await this.records.update(
      ref.owner,
      ref.repo,
      ref.number,
      (r) => r && { ...r, state: 'merged', fixing: undefined },
    );
    return MERGE_TEXT.merged(ref.number, merged.sha);
  }
}

/** A head other than the one the phone's Sessions pushed (a record made before pushedSha was kept: any). */
const notPushed = (record: PullRecord, pull: GitHubPull) =>
  record.pushedSha && record.pushedSha !== pull.head.sha
    ? MERGE_TEXT.notPushed(record.number, pull.head.sha, record.pushedSha)
    : undefined;

/** The head's commit statuses as *merge* weighs them beside its check runs. */
interface StatusChecks {
  /** the contexts that failed or errored */
  failed: string[];
  running: number;
  count: number;
}

const FAILING_STATUS: ReadonlySet<string> = new Set(['failure', 'error']);

/**
 * GitHub's combined state decides (it covers every context, even past the pages read): failure or
 * error is failed, pending with statuses is running; pending with none at all is nothing to wait for.
 */
function statusChecks(combined: GitHubCombinedStatus | undefined): StatusChecks {
  if (!combined) return { failed: [], running: 0, count: 0 };
  const count = Math.max(combined.total_count, combined.statuses.length);
  if (combined.state === 'success') return { failed: [], running: 0, count };
  if (combined.state === 'pending') {
    const running = combined.statuses.filter((s) => s.state === 'pending').length;
    return { failed: [], running: count ? Math.max(running, 1) : 0, count };
  }
  const failed = combined.statuses.filter((s) => FAILING_STATUS.has(s.state)).map((s) => s.context);
  return {
    failed: failed.length ? failed : [`commit status ${combined.state}`],
    running: 0,
    count: Math.max(count, 1),
  };
}

/** The first reason a pull request may not merge, in the order a person can act on them. */
function whyNot(number: number, pull: GitHubPull, allRuns: GitHubCheckRun[], statuses: StatusChecks) {
  if (pull.merged) return MERGE_TEXT.alreadyMerged(number);
  if (pull.state !== 'open') return MERGE_TEXT.closed(number);
  const runs = allRuns.filter((run) => run.head_sha === pull.head.sha);
  const failed = runs.filter((run) => run.status === 'completed' && !isGreen(run)).map((run) => run.name);
  if (failed.length || statuses.failed.length) return MERGE_TEXT.failed(number, [...failed, ...statuses.failed]);
  const running = runs.filter((run) => run.status !== 'completed').length + statuses.running;
  if (running) return MERGE_TEXT.pending(number, running, runs.length + statuses.count);
  if (!runs.length && !statuses.count) return MERGE_TEXT.noChecks(number, pull.head.sha);
  if (pull.mergeable === false) return MERGE_TEXT.conflicts(number, pull.base.ref);
  if (pull.mergeable !== true) return MERGE_TEXT.unknownMergeable(number);
  return undefined;
}
