// *merge* from the phone: allowed by the install (TETHER_GITHUB_MERGE: whenGreen) and the person
// (the people list's `merge`), on an open pull request whose head's check runs all completed green
// and that GitHub finds mergeable — then `PUT …/merge` with that head's sha, in the repository's
// default method. Otherwise one line saying why.
import type { PullRecord } from '../pulls/types.ts';
import { GitHubError, type GitHubClient } from './client.ts';
import { GREEN_CONCLUSIONS } from './event-keys.ts';
import { MERGE_TEXT } from './merge-text.ts';
import { pullPath, readCheckRuns, readPull, type GitHubCheckRun, type GitHubPull, type PullRef } from './reads.ts';

export type MergeSetting = 'never' | 'whenGreen';

/** What the people list says of the person asking; undefined when the install has no people list. */
export interface MergeRights {
  name: string;
  merge?: boolean;
}

export interface Merger {
  /** The reply to *merge*: merged, or why not. */
  merge(record: PullRecord, person: MergeRights | undefined): Promise<string>;
}

export class GitHubMerger implements Merger {
  private readonly setting: MergeSetting;
  private readonly client: GitHubClient | undefined;

  constructor(setting: MergeSetting, client: GitHubClient | undefined) {
    this.setting = setting;
    this.client = client;
  }

  async merge(record: PullRecord, person: MergeRights | undefined): Promise<string> {
    if (this.setting === 'never') return MERGE_TEXT.turnedOff;
    if (person && !person.merge) return MERGE_TEXT.notAllowed(person.name);
    if (!this.client) return MERGE_TEXT.noToken;
    const ref: PullRef = { owner: record.owner, repo: record.repo, number: record.number };
    try {
      return await this.mergeIfGreen(this.client, ref);
    } catch (error) {
      if (error instanceof GitHubError) return MERGE_TEXT.unreachable(ref.number, error.message);
      throw error;
    }
  }

  private async mergeIfGreen(client: GitHubClient, ref: PullRef): Promise<string> {
    const read = await readPull(client, ref);
    if (!read.changed) throw new GitHubError('GitHub answered 304 to an unconditional read');
    const pull = read.body;
    const runs = await readCheckRuns(client, ref, pull.head.sha);
    const reason = whyNot(ref.number, pull, runs.changed ? runs.body : []);
    if (reason) return reason;
    try {
      const result = await client.put<{ merged?: boolean; sha?: string; message?: string }>(`${pullPath(ref)}/merge`, {
        sha: pull.head.sha,
      });
      return result.merged === false
        ? MERGE_TEXT.refused(ref.number, result.message ?? 'no reason given')
        : MERGE_TEXT.merged(ref.number, result.sha);
    } catch (error) {
      if (!(error instanceof GitHubError)) throw error;
      if (error.status === 409) return MERGE_TEXT.headMoved(ref.number);
      if (error.status === 405 || error.status === 403 || error.status === 422)
        return MERGE_TEXT.refused(ref.number, error.message.replace(/^.*?\(\d{3}\):\s*/, ''));
      throw error;
    }
  }
}

/** The first reason a pull request may not merge, in the order a person can act on them. */
function whyNot(number: number, pull: GitHubPull, allRuns: GitHubCheckRun[]): string | undefined {
  if (pull.merged) return MERGE_TEXT.alreadyMerged(number);
  if (pull.state !== 'open') return MERGE_TEXT.closed(number);
  const runs = allRuns.filter((run) => run.head_sha === pull.head.sha);
  const failed = runs.filter((run) => run.status === 'completed' && !GREEN_CONCLUSIONS.has(run.conclusion ?? ''));
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
