// Reviews of a pull request and their line comments: a submitted review is a
// `pull_request_review` submitted delivery (state in lower case there, upper case in REST).
import { emit, type StandInContext } from './context.ts';
import { validationFailed } from './http.ts';
import type { RecordedPull, Repository, Review, ReviewCommentInput, ReviewState } from './model.ts';
import { reviewJson } from './payloads.ts';
import { livePull, pullBody } from './pulls.ts';

export interface NewReview {
  user: string;
  /** approved | changes_requested | commented (either case), or REST's APPROVE | REQUEST_CHANGES | COMMENT. */
  state: string;
  body?: string;
  comments?: ReviewCommentInput[];
  /** The commit reviewed (default the head now). */
  commitId?: string;
}

const STATES: Record<string, ReviewState> = {
  APPROVED: 'APPROVED',
  APPROVE: 'APPROVED',
  CHANGES_REQUESTED: 'CHANGES_REQUESTED',
  REQUEST_CHANGES: 'CHANGES_REQUESTED',
  COMMENTED: 'COMMENTED',
  COMMENT: 'COMMENTED',
};

export async function submitReview(
  ctx: StandInContext,
  repo: Repository,
  pull: RecordedPull,
  input: NewReview,
): Promise<Review> {
  const state = STATES[String(input.state).toUpperCase()];
  if (!state) throw validationFailed([{ resource: 'PullRequestReview', field: 'event', code: 'invalid' }]);
  if ((state === 'CHANGES_REQUESTED' || state === 'COMMENTED') && !input.body && !input.comments?.length)
    throw validationFailed([{ resource: 'PullRequestReview', field: 'body', code: 'missing_field' }]);
  for (const c of input.comments ?? [])
    if (typeof c.path !== 'string' || typeof c.body !== 'string' || !c.body)
      throw validationFailed([{ resource: 'PullRequestReviewComment', field: 'body', code: 'missing_field' }]);
  const commitId = input.commitId ?? (await livePull(ctx, repo, pull)).headSha;
  const now = ctx.clock.now();
  const review: Review = {
    ...ctx.store.stamp(repo),
    number: pull.number,
    user: input.user,
    state,
    body: input.body ?? '',
    commitId,
    submittedAt: now,
  };
  ctx.store.reviews.push(review);
  for (const c of input.comments ?? [])
    ctx.store.reviewComments.push({
      ...ctx.store.stamp(repo),
      reviewId: review.id,
      number: pull.number,
      user: input.user,
      path: c.path,
      ...(c.line !== undefined ? { line: c.line } : {}),
      body: c.body,
      commitId,
      createdAt: now,
    });
  pull.requestedReviewers = pull.requestedReviewers.filter((login) => login !== input.user);
  emit(ctx, 'pull_request_review', repo, input.user, {
    action: 'submitted',
    review: reviewJson(ctx, review, true),
    pull_request: await pullBody(ctx, repo, pull),
  });
  return review;
}
