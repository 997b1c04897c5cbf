// What the stand-in knows: repositories (a bare repository each, when the forge serves one),
// pull requests, check runs and suites, commit statuses, reviews and their comments.
import type { IncomingHttpHeaders } from 'node:http';
import type { BareRepo } from './git.ts';

export type Permission = 'read' | 'write';
export type Permissions = Record<string, Permission>;

export interface Repository {
  id: number;
  owner: string;
  name: string;
  /** The bare repository, when the stand-in knows it: head shas, mergeability and merges are real then. */
  git?: BareRepo;
  defaultBranch: string;
  /** Check names that must be green on the head before a merge (branch protection), set by a test. */
  requiredChecks: string[];
  /** Who may be asked for a review; anyone but the author when absent. */
  collaborators?: string[];
}

export interface RecordedPull {
  owner: string;
  repo: string;
  number: number;
  id: number;
  title: string;
  /** The head branch (an `owner:` prefix taken off). */
  head: string;
  base: string;
  body: string;
  html_url: string;
  /** The creating request's headers. */
  headers: IncomingHttpHeaders;
  /** Who opened it (the token's login). */
  user: string;
  state: 'open' | 'closed';
  merged: boolean;
  draft: boolean;
  /** The head's commit when last seen (kept once closed); null when the repository has no git here. */
  headSha: string | null;
  baseSha: string | null;
  mergeCommitSha: string | null;
  /** A test's word on mergeability, over what git says. */
  mergeable?: boolean;
  requestedReviewers: string[];
  createdAt: number;
  updatedAt: number;
  closedAt: number | null;
  mergedAt: number | null;
}

export type CheckStatus = 'queued' | 'in_progress' | 'completed';
export type CheckConclusion =
  'success' | 'failure' | 'neutral' | 'cancelled' | 'skipped' | 'timed_out' | 'action_required' | 'stale';

export interface CheckOutput {
  title?: string;
  summary?: string;
  text?: string;
}

export interface CheckRun {
  id: number;
  owner: string;
  repo: string;
  headSha: string;
  name: string;
  status: CheckStatus;
  conclusion: CheckConclusion | null;
  output: CheckOutput;
  suiteId: number;
  detailsUrl?: string;
  externalId?: string;
  startedAt: number;
  completedAt: number | null;
}

export interface CheckSuite {
  id: number;
  owner: string;
  repo: string;
  headSha: string;
  headBranch: string | null;
  status: CheckStatus;
  conclusion: CheckConclusion | null;
}

export type CommitState = 'error' | 'failure' | 'pending' | 'success';

/** A commit status (the older Statuses API): one context's word on a commit; the newest of a context counts. */
export interface CommitStatus {
  id: number;
  owner: string;
  repo: string;
  sha: string;
  state: CommitState;
  context: string;
  description: string | null;
  targetUrl: string | null;
  creator: string;
  createdAt: number;
}

export type ReviewState = 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED';

export interface ReviewCommentInput {
  path: string;
  line?: number;
  body: string;
}

export interface Review {
  id: number;
  owner: string;
  repo: string;
  number: number;
  user: string;
  state: ReviewState;
  body: string;
  commitId: string | null;
  submittedAt: number;
}

export interface ReviewComment extends ReviewCommentInput {
  id: number;
  reviewId: number;
  owner: string;
  repo: string;
  number: number;
  user: string;
  commitId: string | null;
  createdAt: number;
}

const GREEN: ReadonlySet<string> = new Set(['success', 'neutral', 'skipped']);
export const isGreen = (conclusion: CheckConclusion | null) => conclusion !== null && GREEN.has(conclusion);

/** A suite's conclusion from its runs', as GitHub sums them: the worst one wins. */
export function suiteConclusion(runs: CheckRun[]): CheckConclusion | null {
  if (runs.some((r) => r.status !== 'completed')) return null;
  const order: CheckConclusion[] = ['action_required', 'cancelled', 'timed_out', 'failure', 'stale'];
  return order.find((c) => runs.some((r) => r.conclusion === c)) ?? 'success';
}
