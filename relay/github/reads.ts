// The few GitHub reads the poll and the merge make, typed and paged: a pull request, the check
// runs and the combined commit status of a commit, the reviews of a pull request and how many
// comments a review holds.
import { type Conditional, type GitHubClient, repoPath } from './client.ts';

export interface GitHubPull {
  number: number;
  state: 'open' | 'closed';
  merged: boolean;
  closed_at?: string | null;
  /** null while GitHub is still working it out */
  mergeable: boolean | null;
  merged_by?: { login: string } | null;
  head: { sha: string; ref: string };
  base: { ref: string };
}

export interface GitHubCheckRun {
  id: number;
  name: string;
  status: string;
  conclusion: string | null;
  head_sha: string;
  output?: { title?: string | null; summary?: string | null; text?: string | null };
  /** the suite (one per app and commit) the run belongs to */
  check_suite?: { id: number } | null;
}

/** Conclusions that let a pull request merge and make a suite's checks "passed". */
const GREEN_CONCLUSIONS: ReadonlySet<string> = new Set(['success', 'neutral', 'skipped']);
export const isGreen = (run: GitHubCheckRun) =>
  run.status === 'completed' && GREEN_CONCLUSIONS.has(run.conclusion ?? '');

/** One context's latest commit status (the older Statuses API, still used by many CI services). */
export interface GitHubCommitStatus {
  context: string;
  /** error, failure, pending or success */
  state: string;
  description?: string | null;
}

/** `GET …/commits/{ref}/status`: the combined state (pending when there are no statuses) and each context's latest. */
export interface GitHubCombinedStatus {
  state: string;
  total_count: number;
  statuses: GitHubCommitStatus[];
}

export interface GitHubReview {
  id: number;
  user: { login: string } | null;
  body: string | null;
  state: string;
  commit_id: string;
}

export interface PullRef {
  owner: string;
  repo: string;
  number: number;
}

const PER_PAGE = 100;
/** Pages read after the first: a head with more than 1,000 check runs or reviews is read in part. */
const MORE_PAGES = 9;

export const pullPath = (pull: PullRef) => `${repoPath(pull.owner, pull.repo)}/pulls/${pull.number}`;

export async function readPull(client: GitHubClient, pull: PullRef, etag?: string): Promise<Conditional<GitHubPull>> {
  return client.getConditional<GitHubPull>(pullPath(pull), etag);
}

/**
 * Every item of a listing that counts them (`total_count`). The first page is conditional; when
 * there are more, the rest are read too and no ETag is given back (the first page's would not
 * vouch for the others).
 */
async function readCounted<P extends { total_count: number }, T>(
  client: GitHubClient,
  path: (page: number) => string,
  itemsOf: (page: P) => T[],
  etag?: string,
): Promise<Conditional<{ first: P; items: T[] }>> {
  const first = await client.getConditional<P>(path(1), etag);
  if (!first.changed) return first;
  const items = [...itemsOf(first.body)];
  for (let page = 2; page <= 1 + MORE_PAGES && items.length < first.body.total_count; page++) {
    const next = itemsOf(await client.get<P>(path(page)));
    if (!next.length) break;
    items.push(...next);
  }
  return { changed: true, body: { first: first.body, items }, etag: items.length > PER_PAGE ? undefined : first.etag };
}

const commitPath = (pull: PullRef, sha: string) =>
  `${repoPath(pull.owner, pull.repo)}/commits/${encodeURIComponent(sha)}`;

/** Every check run of a commit (paged as readCounted). */
export async function readCheckRuns(
  client: GitHubClient,
  pull: PullRef,
  sha: string,
  etag?: string,
): Promise<Conditional<GitHubCheckRun[]>> {
  type Page = { total_count: number; check_runs: GitHubCheckRun[] };
  const path = (page: number) => `${commitPath(pull, sha)}/check-runs?per_page=${PER_PAGE}&page=${page}`;
  const read = await readCounted(client, path, (p: Page) => p.check_runs, etag);
  return read.changed ? { ...read, body: read.body.items } : read;
}

/** The combined commit status of a commit, with every context's latest status (paged as readCounted). */
export async function readCombinedStatus(
  client: GitHubClient,
  pull: PullRef,
  sha: string,
  etag?: string,
): Promise<Conditional<GitHubCombinedStatus>> {
  const path = (page: number) => `${commitPath(pull, sha)}/status?per_page=${PER_PAGE}&page=${page}`;
  const read = await readCounted(client, path, (p: GitHubCombinedStatus) => p.statuses, etag);
  return read.changed ? { ...read, body: { ...read.body.first, statuses: read.body.items } } : read;
}

/** Every submitted review of a pull request, oldest first (paged like readCheckRuns). */
export async function readReviews(
  client: GitHubClient,
  pull: PullRef,
  etag?: string,
): Promise<Conditional<GitHubReview[]>> {
  const path = (page: number) => `${pullPath(pull)}/reviews?per_page=${PER_PAGE}&page=${page}`;
  const first = await client.getConditional<GitHubReview[]>(path(1), etag);
  if (!first.changed) return first;
  const reviews = [...first.body];
  for (let page = 2, last = first.body; page <= 1 + MORE_PAGES && last.length === PER_PAGE; page++) {
    last = await client.get<GitHubReview[]>(path(page));
    reviews.push(...last);
  }
  return { changed: true, body: reviews, etag: reviews.length >= PER_PAGE ? undefined : first.etag };
}

/** How many comments a review left on the code (at most one page is counted). */
export async function reviewCommentCount(client: GitHubClient, pull: PullRef, reviewId: number): Promise<number> {
  const comments = await client.get<unknown[]>(`${pullPath(pull)}/reviews/${reviewId}/comments?per_page=${PER_PAGE}`);
  return comments.length;
}
