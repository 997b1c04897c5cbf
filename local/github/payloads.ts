// The JSON GitHub answers and sends in webhooks, cut to the fields a client of ours may read
// (GitHub's REST and webhook documentation for each object).
import { isoSeconds } from './clock.ts';
import type { CheckRun, CheckSuite, RecordedPull, Repository, Review, ReviewComment } from './model.ts';
import type { Store } from './store.ts';

/** Where the stand-in's pull requests and checks say they are on the web. */
export const HTML_ORIGIN = 'https://github.example';

export interface PayloadContext {
  store: Store;
  /** The stand-in's REST base URL. */
  apiUrl: string;
}

const time = (ms: number | null) => (ms === null ? null : isoSeconds(ms));

export function userJson(ctx: PayloadContext, login: string) {
  return {
    login,
    id: ctx.store.userId(login),
    type: login.endsWith('[bot]') ? 'Bot' : 'User',
    html_url: `${HTML_ORIGIN}/${login}`,
  };
}

export function repoJson(ctx: PayloadContext, repo: Repository) {
  const full = `${repo.owner}/${repo.name}`;
  return {
    id: repo.id,
    name: repo.name,
    full_name: full,
    private: true,
    owner: userJson(ctx, repo.owner),
    html_url: `${HTML_ORIGIN}/${full}`,
    url: `${ctx.apiUrl}/repos/${full}`,
    default_branch: repo.defaultBranch,
  };
}

/** What the pull request is now: its head and base commits and whether it merges (undefined: not known). */
export interface PullLive {
  headSha: string | null;
  baseSha: string | null;
  mergeable: boolean | null;
  mergeableState: 'clean' | 'dirty' | 'blocked' | 'unknown';
  stat?: { commits: number; additions: number; deletions: number; files: number };
}

export function pullJson(ctx: PayloadContext, repo: Repository, pull: RecordedPull, live: PullLive) {
  const side = (ref: string, sha: string | null) => ({
    label: `${repo.owner}:${ref}`,
    ref,
    sha,
    user: userJson(ctx, repo.owner),
    repo: repoJson(ctx, repo),
  });
  return {
    url: `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}/pulls/${pull.number}`,
    id: pull.id,
    number: pull.number,
    html_url: pull.html_url,
    state: pull.state,
    locked: false,
    title: pull.title,
    body: pull.body,
    user: userJson(ctx, pull.user),
    draft: pull.draft,
    created_at: time(pull.createdAt),
    updated_at: time(pull.updatedAt),
    closed_at: time(pull.closedAt),
    merged_at: time(pull.mergedAt),
    merged: pull.merged,
    merge_commit_sha: pull.mergeCommitSha,
    mergeable: live.mergeable,
    mergeable_state: live.mergeableState,
    requested_reviewers: pull.requestedReviewers.map((login) => userJson(ctx, login)),
    requested_teams: [],
    head: side(pull.head, live.headSha),
    base: side(pull.base, live.baseSha),
    ...(live.stat
      ? {
          commits: live.stat.commits,
          additions: live.stat.additions,
          deletions: live.stat.deletions,
          changed_files: live.stat.files,
        }
      : {}),
  };
}

/** A pull request as a check run or suite lists it. */
export function pullRefJson(ctx: PayloadContext, repo: Repository, pull: RecordedPull, headSha: string | null) {
  const mini = { id: repo.id, name: repo.name, url: `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}` };
  return {
    id: pull.id,
    number: pull.number,
    url: `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}/pulls/${pull.number}`,
    head: { ref: pull.head, sha: headSha, repo: mini },
    base: { ref: pull.base, sha: pull.baseSha, repo: mini },
  };
}

export function checkSuiteJson(ctx: PayloadContext, suite: CheckSuite, pulls: unknown[]) {
  return {
    id: suite.id,
    head_branch: suite.headBranch,
    head_sha: suite.headSha,
    status: suite.status,
    conclusion: suite.conclusion,
    url: `${ctx.apiUrl}/repos/${suite.owner}/${suite.repo}/check-suites/${suite.id}`,
    pull_requests: pulls,
    app: { id: 1, slug: 'stand-in-ci', name: 'Stand-in CI' },
  };
}

export function checkRunJson(ctx: PayloadContext, run: CheckRun, suite: CheckSuite, pulls: unknown[]) {
  return {
    id: run.id,
    name: run.name,
    head_sha: run.headSha,
    external_id: run.externalId ?? '',
    status: run.status,
    conclusion: run.conclusion,
    started_at: time(run.startedAt),
    completed_at: time(run.completedAt),
    url: `${ctx.apiUrl}/repos/${run.owner}/${run.repo}/check-runs/${run.id}`,
    html_url: `${HTML_ORIGIN}/${run.owner}/${run.repo}/runs/${run.id}`,
    details_url: run.detailsUrl ?? `${HTML_ORIGIN}/${run.owner}/${run.repo}/runs/${run.id}`,
    output: {
      title: run.output.title ?? null,
      summary: run.output.summary ?? null,
      text: run.output.text ?? null,
      annotations_count: 0,
    },
    check_suite: { id: suite.id, head_branch: suite.headBranch, head_sha: suite.headSha },
    app: { id: 1, slug: 'stand-in-ci', name: 'Stand-in CI' },
    pull_requests: pulls,
  };
}

/** A review; webhooks spell its state in lower case, REST in upper case. */
export function reviewJson(ctx: PayloadContext, review: Review, forWebhook = false) {
  const pullPath = `${review.owner}/${review.repo}/pull/${review.number}`;
  return {
    id: review.id,
    user: userJson(ctx, review.user),
    body: review.body,
    state: forWebhook ? review.state.toLowerCase() : review.state,
    commit_id: review.commitId,
    submitted_at: time(review.submittedAt),
    html_url: `${HTML_ORIGIN}/${pullPath}#pullrequestreview-${review.id}`,
    pull_request_url: `${ctx.apiUrl}/repos/${review.owner}/${review.repo}/pulls/${review.number}`,
    author_association: 'COLLABORATOR',
  };
}

export function reviewCommentJson(ctx: PayloadContext, comment: ReviewComment) {
  return {
    id: comment.id,
    pull_request_review_id: comment.reviewId,
    user: userJson(ctx, comment.user),
    body: comment.body,
    path: comment.path,
    line: comment.line ?? null,
    original_line: comment.line ?? null,
    side: 'RIGHT',
    commit_id: comment.commitId,
    original_commit_id: comment.commitId,
    diff_hunk: '',
    created_at: time(comment.createdAt),
    updated_at: time(comment.createdAt),
    html_url: `${HTML_ORIGIN}/${comment.owner}/${comment.repo}/pull/${comment.number}#discussion_r${comment.id}`,
  };
}
