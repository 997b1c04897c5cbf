// Pull requests: opened on a branch of the bare repository, their head read from it (a push to
// the branch is a `synchronize`), closed and reopened, reviewers requested, and merged for real —
// `git merge-tree --write-tree` and `commit-tree` in the bare repository, no work tree — after
// GitHub's preconditions: open, the sha asked for still the head (409), required checks green and
// no conflict (405).
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { emit, type StandInContext } from './context.ts';
import { HttpError, validationFailed } from './http.ts';
import { isGreen, type RecordedPull, type Repository } from './model.ts';
import { HTML_ORIGIN, pullJson, type PullLive } from './payloads.ts';

export interface NewPull {
  title: string;
  head: string;
  base: string;
  body?: string;
  draft?: boolean;
  /** For a repository the stand-in has no git for: the head commit to record (tests). */
  headSha?: string;
}

/** The head and base commits now, and whether the pull request would merge. */
export async function livePull(ctx: StandInContext, repo: Repository, pull: RecordedPull, stat = false) {
  const open = pull.state === 'open';
  const headSha = open && repo.git ? ((await repo.git.commitOf(pull.head)) ?? pull.headSha) : pull.headSha;
  const baseSha = open && repo.git ? ((await repo.git.commitOf(pull.base)) ?? pull.baseSha) : pull.baseSha;
  const live: PullLive = { headSha, baseSha, mergeable: null, mergeableState: 'unknown' };
  if (!open) return live;
  const conflictFree =
    pull.mergeable ??
    (repo.git && headSha && baseSha ? (await repo.git.mergedTree(baseSha, headSha)) !== undefined : true);
  live.mergeable = conflictFree;
  live.mergeableState = !conflictFree ? 'dirty' : requiredChecksProblem(ctx, repo, headSha) ? 'blocked' : 'clean';
  if (stat && repo.git && headSha && baseSha) live.stat = await repo.git.stat(baseSha, headSha);
  return live;
}

export async function pullBody(ctx: StandInContext, repo: Repository, pull: RecordedPull, stat = false) {
  return pullJson(ctx, repo, pull, await livePull(ctx, repo, pull, stat));
}

export async function createPull(
  ctx: StandInContext,
  repo: Repository,
  input: NewPull,
  user: string,
  headers: IncomingHttpHeaders = {},
): Promise<RecordedPull> {
  const head = input.head.includes(':') ? input.head.slice(input.head.indexOf(':') + 1) : input.head;
  const [headSha, baseSha] = repo.git
    ? [await repo.git.commitOf(head), await repo.git.commitOf(input.base)]
    : [input.headSha ?? null, null];
  if (repo.git && !baseSha) throw validationFailed([{ resource: 'PullRequest', field: 'base', code: 'invalid' }]);
  if (repo.git && !headSha) throw validationFailed([{ resource: 'PullRequest', field: 'head', code: 'invalid' }]);
  const taken = ctx.store.pullsOf(repo).find((p) => p.state === 'open' && p.head === head && p.base === input.base);
  if (taken) throw custom(`A pull request already exists for ${repo.owner}:${head}.`);
  if (repo.git && headSha && baseSha && (await repo.git.isAncestor(headSha, baseSha)))
    throw custom(`No commits between ${input.base} and ${head}`);
  const number = ctx.store.nextPullNumber(repo);
  const now = ctx.clock.now();
  const pull: RecordedPull = {
    owner: repo.owner,
    repo: repo.name,
    number,
    id: ctx.store.id(),
    title: input.title,
    head,
    base: input.base,
    body: input.body ?? '',
    html_url: `${HTML_ORIGIN}/${repo.owner}/${repo.name}/pull/${number}`,
    headers,
    user,
    state: 'open',
    merged: false,
    draft: input.draft ?? false,
    headSha: headSha ?? null,
    baseSha: baseSha ?? null,
    mergeCommitSha: null,
    requestedReviewers: [],
    createdAt: now,
    updatedAt: now,
    closedAt: null,
    mergedAt: null,
  };
  ctx.store.pulls.push(pull);
  await announce(ctx, repo, pull, 'opened', user);
  return pull;
}

const custom = (message: string) => validationFailed([{ resource: 'PullRequest', code: 'custom', message }]);

export async function announce(
  ctx: StandInContext,
  repo: Repository,
  pull: RecordedPull,
  action: string,
  sender: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  emit(ctx, 'pull_request', repo, sender, {
    action,
    number: pull.number,
    pull_request: await pullBody(ctx, repo, pull),
    ...extra,
  });
}

/** Closes or reopens the pull request (PATCH state), or changes its title or body. */
export async function updatePull(
  ctx: StandInContext,
  repo: Repository,
  pull: RecordedPull,
  change: { state?: 'open' | 'closed'; title?: string; body?: string },
  sender: string,
): Promise<void> {
  if (change.title !== undefined) pull.title = change.title;
  if (change.body !== undefined) pull.body = change.body;
  pull.updatedAt = ctx.clock.now();
  if (change.state && change.state !== pull.state) {
    if (pull.merged) throw custom('Cannot reopen a merged pull request');
    if (change.state === 'closed') await freeze(repo, pull);
    pull.state = change.state;
    pull.closedAt = change.state === 'closed' ? ctx.clock.now() : null;
    return announce(ctx, repo, pull, change.state === 'closed' ? 'closed' : 'reopened', sender);
  }
  if (change.title !== undefined || change.body !== undefined) await announce(ctx, repo, pull, 'edited', sender);
}

/** Keeps the last head and base a closed pull request had. */
async function freeze(repo: Repository, pull: RecordedPull): Promise<void> {
  if (!repo.git) return;
  pull.headSha = (await repo.git.commitOf(pull.head)) ?? pull.headSha;
  pull.baseSha = (await repo.git.commitOf(pull.base)) ?? pull.baseSha;
}

/** Why the required checks keep the head from merging, or undefined. */
export function requiredChecksProblem(ctx: StandInContext, repo: Repository, headSha: string | null) {
  for (const name of repo.requiredChecks) {
    const runs = ctx.store.checkRuns.filter((r) => r.owner === repo.owner && r.repo === repo.name);
    const latest = runs.filter((r) => r.headSha === headSha && r.name === name).at(-1);
    if (!latest) return `Required status check "${name}" is expected.`;
    if (latest.status !== 'completed') return `Required status check "${name}" is in progress.`;
    if (!isGreen(latest.conclusion)) return `Required status check "${name}" is failing.`;
  }
  return undefined;
}

export interface MergeRequest {
  sha?: string;
  merge_method?: string;
  commit_title?: string;
  commit_message?: string;
}

export async function mergePull(
  ctx: StandInContext,
  repo: Repository,
  pull: RecordedPull,
  request: MergeRequest,
  sender: string,
): Promise<{ sha: string; merged: true; message: string }> {
  if (pull.state !== 'open') throw new HttpError(405, 'Pull Request is not mergeable');
  const live = await livePull(ctx, repo, pull);
  if (request.sha !== undefined && request.sha !== live.headSha)
    throw new HttpError(409, 'Head branch was modified. Review and try the merge again.');
  const method = request.merge_method ?? 'merge';
  if (!['merge', 'squash'].includes(method))
    throw new HttpError(
      405,
      `${method[0]!.toUpperCase()}${method.slice(1)} merges are not allowed on this repository.`,
    );
  const blocked = requiredChecksProblem(ctx, repo, live.headSha);
  if (blocked) throw new HttpError(405, blocked);
  if (!live.mergeable) throw new HttpError(405, 'Pull Request is not mergeable');
  const sha = repo.git ? await mergeInGit(repo, pull, live, method, request) : randomBytes(20).toString('hex');
  const now = ctx.clock.now();
  Object.assign(pull, {
    state: 'closed',
    merged: true,
    mergedAt: now,
    closedAt: now,
    updatedAt: now,
    mergeCommitSha: sha,
    headSha: live.headSha,
    baseSha: live.baseSha,
  });
  await announce(ctx, repo, pull, 'closed', sender);
  return { sha, merged: true, message: 'Pull Request successfully merged' };
}

async function mergeInGit(
  repo: Repository,
  pull: RecordedPull,
  live: PullLive,
  method: string,
  request: MergeRequest,
): Promise<string> {
  const git = repo.git!;
  const [base, head] = [live.baseSha!, live.headSha!];
  const tree = await git.mergedTree(base, head);
  if (!tree) throw new HttpError(405, 'Pull Request is not mergeable');
  const title =
    request.commit_title ??
    (method === 'squash'
      ? `${pull.title} (#${pull.number})`
      : `Merge pull request #${pull.number} from ${repo.owner}/${pull.head}`);
  const message = [title, request.commit_message ?? (method === 'squash' ? '' : pull.title)]
    .filter(Boolean)
    .join('\n\n');
  const parents = method === 'squash' ? [base] : [base, head];
  const commit = await git.commitTree(tree, parents, message, { name: 'GitHub', email: 'noreply@github.example' });
  if (!(await git.moveBranch(pull.base, commit, base)))
    throw new HttpError(409, 'Base branch was modified. Review and try the merge again.');
  return commit;
}

/**
 * After a push: each open pull request whose head branch moved gets `synchronize` (before/after);
 * one whose head branch is gone is closed, as GitHub does.
 */
export async function notePush(ctx: StandInContext, repo: Repository, sender: string): Promise<void> {
  if (!repo.git) return;
  for (const pull of ctx.store.pullsOf(repo).filter((p) => p.state === 'open')) {
    const now = await repo.git.commitOf(pull.head);
    if (now === pull.headSha) continue;
    const before = pull.headSha;
    if (!now) {
      await updatePull(ctx, repo, pull, { state: 'closed' }, sender);
      continue;
    }
    pull.headSha = now;
    pull.updatedAt = ctx.clock.now();
    await announce(ctx, repo, pull, 'synchronize', sender, { before, after: now });
  }
}
