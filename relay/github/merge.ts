// *merge* from the phone (when TETHER_GITHUB_MERGE is whenGreen): allowed by the person (the people
// list's `merge`), on an open pull request whose head's check runs all completed green and that
// GitHub finds mergeable — then `PUT …/merge` with that head's sha, in the repository's default
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
  readPull,
  type GitHubCheckRun,
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
      return await this.mergeIfGreen(ref);
    } catch (error) {
      if (error instanceof GitHubError) return MERGE_TEXT.unreachable(ref.number, error.message);
      throw error;
    }
  }

  private async mergeIfGreen(ref: PullRef): Promise<string> {
    const read = await readPull(this.client, ref);
    if (!read.changed) throw new GitHubError('GitHub answered 304 to an unconditional read');
    const pull = read.body;
    const runs = await readCheckRuns(this.client, ref, pull.head.sha);
    const reason = whyNot(ref.number, pull, runs.changed ? runs.body : []);
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

/** The first reason a pull request may not merge, in the order a person can act on them. */
function whyNot(number: number, pull: GitHubPull, allRuns: GitHubCheckRun[]): string | undefined {
  if (pull.merged) return MERGE_TEXT.alreadyMerged(number);
  if (pull.state !== 'open') return MERGE_TEXT.closed(number);
  const runs = allRuns.filter((run) => run.head_sha === pull.head.sha);
  const failed = runs.filter((run) => run.status === 'completed' && !isGreen(run));
  if (failed.length)
    return MERGE_TEXT.failed(
      number,
      failed.map((run) => run.name),
    );
  const running = runs.filter((run) => run.status !== 'completed').length;
  if (running) return MERGE_TEXT.pending(number, running, runs.length);
  if (!runs.length) return MERGE_TEXT.noChecks(number, pull.head.sha);
  if (pull.mergeable === false) return MERGE_TEXT.conflicts(number, pull.base.ref);
  if (pull.mergeable !== true) return MERGE_TEXT.unknownMergeable(number);
  return undefined;
}
