// What the poll read, turned into the PullEvents the webhook makes of the same facts (pure).
import type { PullEvent } from '../pulls/types.ts';
import { checkExcerpt, eventKeys, oneLine, FAILED_CONCLUSIONS, GREEN_CONCLUSIONS } from './event-keys.ts';
import type { GitHubCheckRun, GitHubPull, GitHubReview, PullRef } from './reads.ts';

const GIST_CHARS = 200;

/** Merged or closed; a new head; or nothing. */
export function pullEvents(ref: PullRef, pull: GitHubPull, knownHead: string | undefined): PullEvent[] {
  const by = pull.merged_by?.login;
  if (pull.merged) return [{ ...ref, kind: 'merged', key: eventKeys.merged(ref.number), ...(by ? { by } : {}) }];
  if (pull.state === 'closed') return [{ ...ref, kind: 'closed', key: eventKeys.closed(ref.number) }];
  if (pull.head.sha === knownHead) return [];
  return [{ ...ref, kind: 'headMoved', key: eventKeys.headMoved(pull.head.sha), headSha: pull.head.sha }];
}

/** One checksFailed per failing run of the head; checksPassed once every run completed green. */
export function checkEvents(ref: PullRef, headSha: string, runs: GitHubCheckRun[]): PullEvent[] {
  const ofHead = runs.filter((run) => run.head_sha === headSha);
  const failed = ofHead.filter((run) => run.status === 'completed' && FAILED_CONCLUSIONS.has(run.conclusion ?? ''));
  const events: PullEvent[] = failed.map((run) => ({
    ...ref,
    kind: 'checksFailed',
    key: eventKeys.checkRun(run.id, headSha),
    headSha,
    checks: [{ id: run.id, name: run.name, excerpt: checkExcerpt(run.output) }],
  }));
  const green =
    ofHead.length > 0 &&
    ofHead.every((run) => run.status === 'completed' && GREEN_CONCLUSIONS.has(run.conclusion ?? ''));
  if (green) events.push({ ...ref, kind: 'checksPassed', key: eventKeys.checksPassed(headSha), headSha });
  return events;
}

/** The reviews that ask for something, each with the comments it left (counted by `countComments`). */
export async function reviewEvents(
  ref: PullRef,
  reviews: GitHubReview[],
  seen: ReadonlySet<string>,
  countComments: (reviewId: number) => Promise<number>,
): Promise<PullEvent[]> {
  const events: PullEvent[] = [];
  for (const review of reviews) {
    const key = eventKeys.review(review.id);
    if (seen.has(key) || (review.state !== 'CHANGES_REQUESTED' && review.state !== 'COMMENTED')) continue;
    const comments = await countComments(review.id);
    const gist = gistOf(review.body);
    if (review.state === 'COMMENTED' && comments === 0 && !gist) continue;
    events.push({
      ...ref,
      kind: review.state === 'CHANGES_REQUESTED' ? 'changesRequested' : 'reviewComments',
      key,
      headSha: review.commit_id,
      reviewId: review.id,
      reviewer: review.user?.login ?? 'someone',
      gist,
      comments,
    });
  }
  return events;
}

const gistOf = (body: string | null) => oneLine(body ?? '', GIST_CHARS);
