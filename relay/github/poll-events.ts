// What the poll read, turned into the PullEvents the webhook (events.ts) makes of the same facts,
// with the same keys, so that whichever comes second is seen as done. Pure but for the comment count.
import type { PullEvent } from '../pulls/types.ts';
import { CHECK_NAME_CHARS, excerptOf, FAILED } from './events.ts';
import { isGreen, type GitHubCheckRun, type GitHubPull, type GitHubReview, type PullRef } from './reads.ts';

/** Merged or closed (keyed by when, as a reopened and closed again pull request is news); a new head; or nothing. */
export function pullEvents(ref: PullRef, pull: GitHubPull, knownHead: string | undefined): PullEvent[] {
  const key = `closed:${pull.closed_at ?? ''}`;
  const by = pull.merged_by?.login;
  if (pull.merged) return [{ ...ref, key, kind: 'merged', by }];
  if (pull.state === 'closed') return [{ ...ref, key, kind: 'closed', by: undefined }];
  if (pull.head.sha === knownHead) return [];
  return [{ ...ref, key: `head:${pull.head.sha}`, kind: 'headMoved', headSha: pull.head.sha }];
}

/** One checksFailed per failing run of the head; one checksPassed per suite whose runs all completed green. */
export function checkEvents(ref: PullRef, headSha: string, runs: GitHubCheckRun[]): PullEvent[] {
  const ofHead = runs.filter((run) => run.head_sha === headSha);
  const failed = ofHead.filter((run) => run.status === 'completed' && FAILED.has(run.conclusion ?? ''));
  const events: PullEvent[] = failed.map((run) => ({
    ...ref,
    key: `check_run:${run.id}:${headSha}`,
    kind: 'checksFailed',
    headSha,
    checks: [
      {
        id: run.id,
        name: run.name.slice(0, CHECK_NAME_CHARS),
        excerpt: excerptOf(run.output?.title, run.output?.summary, run.output?.text),
      },
    ],
  }));
  const suites = Map.groupBy(ofHead, (run) => run.check_suite?.id ?? 0);
  for (const [suite, ofSuite] of suites) {
    if (suite && ofSuite.every(isGreen))
      events.push({ ...ref, key: `check_suite:${suite}:${headSha}`, kind: 'checksPassed', headSha });
  }
  return events;
}

/** The reviews that ask for something, each with the comments it left on the code (`countComments`). */
export async function reviewEvents(
  ref: PullRef,
  reviews: GitHubReview[],
  seen: Pick<ReadonlySet<string>, 'has'>,
  countComments: (reviewId: number) => Promise<number>,
): Promise<PullEvent[]> {
  const events: PullEvent[] = [];
  for (const review of reviews) {
    const key = `review:${review.id}`;
    if (seen.has(key) || (review.state !== 'CHANGES_REQUESTED' && review.state !== 'COMMENTED')) continue;
    const comments = await countComments(review.id);
    const gist = excerptOf(review.body);
    if (review.state === 'COMMENTED' && comments === 0 && !gist) continue;
    events.push({
      ...ref,
      key,
      kind: review.state === 'CHANGES_REQUESTED' ? 'changesRequested' : 'reviewComments',
      headSha: review.commit_id,
      reviewId: review.id,
      reviewer: review.user?.login ?? '',
      gist,
      comments,
    });
  }
  return events;
}
