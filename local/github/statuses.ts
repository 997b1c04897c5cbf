// Commit statuses (GitHub's Statuses API): a test or a caller with `statuses: write` creates one
// for a commit; the combined status of a ref is each context's newest status and a state — failure
// when any is error or failure, pending when there are none or any is pending, success otherwise.
import type { StandInContext } from './context.ts';
import { validationFailed } from './http.ts';
import type { CommitState, CommitStatus, Repository } from './model.ts';
import { isoSeconds } from './clock.ts';
import { repoJson, userJson } from './payloads.ts';

export interface NewCommitStatus {
  state: CommitState;
  /** GitHub's default: "default" */
  context?: string;
  description?: string;
  targetUrl?: string;
}

const STATES: readonly string[] = ['error', 'failure', 'pending', 'success'];

export async function createStatus(
  ctx: StandInContext,
  repo: Repository,
  sha: string,
  input: NewCommitStatus,
  creator: string,
): Promise<CommitStatus> {
  if (!STATES.includes(input.state))
    throw validationFailed([{ resource: 'Status', field: 'state', code: 'custom', message: 'State is not included' }]);
  if (repo.git && !(await repo.git.commitOf(sha)))
    throw validationFailed([
      { resource: 'Status', field: 'sha', code: 'invalid', message: `No commit found for SHA: ${sha}` },
    ]);
  const status: CommitStatus = {
    ...ctx.store.stamp(repo),
    sha,
    state: input.state,
    context: input.context || 'default',
    description: input.description ?? null,
    targetUrl: input.targetUrl ?? null,
    creator,
    createdAt: ctx.clock.now(),
  };
  ctx.store.statuses.push(status);
  return status;
}

export function statusJson(ctx: StandInContext, status: CommitStatus) {
  const time = isoSeconds(status.createdAt);
  return {
    id: status.id,
    url: `${ctx.apiUrl}/repos/${status.owner}/${status.repo}/statuses/${status.sha}`,
    state: status.state,
    description: status.description,
    target_url: status.targetUrl,
    context: status.context,
    created_at: time,
    updated_at: time,
    creator: userJson(ctx, status.creator),
  };
}

/** Each context's newest status of the commit, newest first. */
export function latestStatuses(ctx: StandInContext, repo: Repository, sha: string): CommitStatus[] {
  const all = ctx.store.statuses.filter((s) => s.owner === repo.owner && s.repo === repo.name && s.sha === sha);
  return all.reverse().filter((s, i, newest) => newest.findIndex((o) => o.context === s.context) === i);
}

export function combinedState(statuses: CommitStatus[]): CommitState {
  if (statuses.some((s) => s.state === 'error' || s.state === 'failure')) return 'failure';
  if (!statuses.length || statuses.some((s) => s.state === 'pending')) return 'pending';
  return 'success';
}

/** `GET …/commits/{ref}/status`: the combined state over every context, `statuses` one page of them. */
export function combinedJson(
  ctx: StandInContext,
  repo: Repository,
  sha: string,
  page: CommitStatus[],
  all: CommitStatus[],
) {
  return {
    state: combinedState(all),
    statuses: page.map((s) => statusJson(ctx, s)),
    sha,
    total_count: all.length,
    repository: repoJson(ctx, repo),
    commit_url: `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}/commits/${sha}`,
    url: `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}/commits/${sha}/status`,
  };
}
