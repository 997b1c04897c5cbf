// The GitHub REST API with the supervisor's own token (GITHUB_API_URL: github.com, Enterprise, or a
// stand-in): open a pull request, request a reviewer, read check runs and reviews for a fix.
import type { Redactor } from '../../common/log.ts';
import type { TokenSource } from '../git/env.ts';
import { sendText, type ProxyAgents } from '../egress/http.ts';
import { forgeText } from './text.ts';

/** Where the API is and the token for it (never given to the agent): a value, or a function read at each call. */
export interface GitHubAccess {
  apiUrl: string;
  /** read at each call: an App token is renewed under the runner */
  token: TokenSource;
  /** Set: every call goes through the egress proxy as the supervisor. */
  proxy?: ProxyAgents;
}

const tokenOf = ({ token }: GitHubAccess) => token();

export interface PullRequestInput {
  owner: string;
  repo: string;
  head: string;
  base: string;
  title: string;
  body: string;
}

export interface RepoSlug {
  owner: string;
  repo: string;
}

/** A refusal of the API: its status, and a message naming it with the start of GitHub's answer (redacted). */
export class GitHubRefused extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const REQUEST_TIMEOUT_MS = 30_000;

/** owner/repo from https://host/owner/repo(.git), git@host:owner/repo(.git) or a path …/owner/repo(.git). */
export function repoSlug(url: string): RepoSlug {
  const path = url
    .replace(/^[a-z+]+:\/\/[^/]+\//i, '')
    .replace(/^[^@/]+@[^:]+:/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
  const parts = path.split('/').filter(Boolean);
  if (parts.length < 2) throw new Error(`cannot tell owner/repo from the repository URL`);
  return { owner: parts.at(-2)!, repo: parts.at(-1)! };
}

/** `/repos/{owner}/{repo}` and the rest, each part encoded. */
export function repoPath({ owner, repo }: RepoSlug, ...rest: Array<string | number>): string {
  return ['repos', owner, repo, ...rest].map((part) => encodeURIComponent(String(part))).join('/');
}

/** One call; the parsed JSON answer, or GitHubRefused saying `what` failed. */
export async function githubCall<T>(
  github: GitHubAccess,
  redact: Redactor,
  what: string,
  request: { method: 'GET' | 'POST'; path: string; body?: unknown },
): Promise<T> {
  const token = tokenOf(github);
  const init = {
    method: request.method,
    headers: {
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
      'user-agent': 'tether-runner',
      ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  };
  const url = `${github.apiUrl}/${request.path}`;
  const response = github.proxy
    ? await sendText(github.proxy, url, init)
    : await fetch(url, init).then(async (r) => ({ status: r.status, ok: r.ok, text: await r.text() }));
  const { text } = response;
  if (!response.ok)
    throw new GitHubRefused(
      response.status,
      redact(`GitHub refused ${what} (${response.status}): ${text.slice(0, 300)}`),
    );
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`GitHub answered ${what} with something that is not JSON`);
  }
}

export async function createPullRequest(
  github: GitHubAccess,
  pr: PullRequestInput,
  redact: Redactor,
): Promise<{ url: string; number: number }> {
  const body = await githubCall<{ html_url?: unknown; number?: unknown }>(github, redact, 'the pull request', {
    method: 'POST',
    path: repoPath(pr, 'pulls'),
    body: { title: forgeText(pr.title), head: pr.head, base: pr.base, body: forgeText(pr.body) },
  });
  if (typeof body.html_url !== 'string') throw new Error('GitHub answered without html_url');
  if (!Number.isSafeInteger(body.number) || (body.number as number) < 1)
    throw new Error('GitHub answered without the pull request number');
  return { url: body.html_url, number: body.number as number };
}

/** The open pull request from `head` into `base`, when there is one (`GET …/pulls?head=owner:branch`). */
export async function openPullRequestOf(
  github: GitHubAccess,
  pr: PullRequestInput,
  redact: Redactor,
): Promise<{ url: string; number: number } | undefined> {
  const query = new URLSearchParams({ head: `${pr.owner}:${pr.head}`, base: pr.base, state: 'open' });
  const found = await githubCall<Array<{ html_url?: unknown; number?: unknown }>>(github, redact, 'the pull requests', {
    method: 'GET',
    path: `${repoPath(pr, 'pulls')}?${query}`,
  });
  const open = Array.isArray(found) ? found[0] : undefined;
  if (!open || typeof open.html_url !== 'string' || !Number.isSafeInteger(open.number)) return undefined;
  return { url: open.html_url, number: open.number as number };
}

/** `POST …/pulls/{n}/requested_reviewers`. */
export async function requestReviewer(
  github: GitHubAccess,
  pr: RepoSlug & { number: number },
  login: string,
  redact: Redactor,
): Promise<void> {
  await githubCall(github, redact, `the review request for @${login}`, {
    method: 'POST',
    path: repoPath(pr, 'pulls', pr.number, 'requested_reviewers'),
    body: { reviewers: [login] },
  });
}
