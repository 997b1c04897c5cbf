// Opens pull requests through the GitHub REST API (GITHUB_API_URL: github.com, Enterprise, or a fake).
import type { Redactor } from '../../common/log.ts';
import { forgeText } from './text.ts';

export interface PullRequestInput {
  owner: string;
  repo: string;
  head: string;
  base: string;
  title: string;
  body: string;
}

/** owner/repo from https://host/owner/repo(.git), git@host:owner/repo(.git) or a path …/owner/repo(.git). */
export function repoSlug(url: string): { owner: string; repo: string } {
  const path = url
    .replace(/^[a-z+]+:\/\/[^/]+\//i, '')
    .replace(/^[^@/]+@[^:]+:/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
  const parts = path.split('/').filter(Boolean);
  if (parts.length < 2) throw new Error(`cannot tell owner/repo from the repository URL`);
  return { owner: parts.at(-2)!, repo: parts.at(-1)! };
}

export async function createPullRequest(
  apiUrl: string,
  token: string | undefined,
  pr: PullRequestInput,
  redact: Redactor,
): Promise<{ url: string; number: number }> {
  const response = await fetch(`${apiUrl}/repos/${encodeURIComponent(pr.owner)}/${encodeURIComponent(pr.repo)}/pulls`, {
    method: 'POST',
    headers: {
      accept: 'application/vnd.github+json',
      'content-type': 'application/json',
      'x-github-api-version': '2022-11-28',
      'user-agent': 'tether-runner',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ title: forgeText(pr.title), head: pr.head, base: pr.base, body: forgeText(pr.body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (!response.ok)
    throw new Error(redact(`GitHub refused the pull request (${response.status}): ${text.slice(0, 300)}`));
  const body = JSON.parse(text) as { html_url?: unknown; number?: unknown };
  if (typeof body.html_url !== 'string') throw new Error('GitHub answered without html_url');
  return { url: body.html_url, number: Number(body.number) };
}
