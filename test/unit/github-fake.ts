// A small in-test GitHub for the relay's client, poll and merge: pull requests, check runs, the
// combined commit status of a head, reviews and their comments, merge — each GET with an ETag and
// 304 — and a log of every request.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MemoryPullRecords } from '../../relay/pulls/records.ts';
import type { PullRecord } from '../../relay/pulls/types.ts';
import { pullRecord as fixtureRecord } from './github-fixtures.ts';
import type { GitHubCheckRun, GitHubCommitStatus, GitHubPull, GitHubReview } from '../../relay/github/reads.ts';

export interface FakePull extends GitHubPull {
  checkRuns: GitHubCheckRun[];
  /** the head's commit statuses, one per context */
  statuses: GitHubCommitStatus[];
  reviews: Array<GitHubReview & { comments: number }>;
}

export interface FakeGitHub {
  url: string;
  pulls: Map<string, FakePull>;
  requests: Array<{ method: string; path: string; status: number; authorization?: string; body?: unknown }>;
  /** set: every answer is 403 with the rate limit spent until then (epoch seconds) */
  rateLimitedUntil?: number;
  close(): Promise<void>;
}

export const pullKey = (owner: string, repo: string, n: number) => `${owner}/${repo}#${n}`;

export function fakePull(number: number, sha: string, more: Partial<FakePull> = {}): FakePull {
  return {
    number,
    state: 'open',
    merged: false,
    mergeable: true,
    merged_by: null,
    head: { sha, ref: `tether/s-${number}` },
    base: { ref: 'main' },
    checkRuns: [],
    statuses: [],
    reviews: [],
    ...more,
  };
}

let nextRunId = 100;
export function checkRun(sha: string, name: string, conclusion: string | null, summary = ''): GitHubCheckRun {
  return {
    id: nextRunId++,
    name,
    status: conclusion ? 'completed' : 'in_progress',
    conclusion,
    head_sha: sha,
    output: { title: name, summary, text: null },
  };
}

function answer(pull: FakePull, route: string[]): { status: number; body: unknown } {
  const { checkRuns: _runs, statuses: _statuses, reviews, ...plain } = pull;
  if (route.length === 0) return { status: 200, body: plain };
  if (route[0] === 'reviews' && route.length === 1)
    return { status: 200, body: reviews.map(({ comments: _, ...review }) => review) };
  if (route[0] === 'reviews' && route[2] === 'comments') {
    const review = reviews.find((r) => r.id === Number(route[1]));
    return review
      ? { status: 200, body: Array.from({ length: review.comments }, (_, i) => ({ id: i + 1, body: 'nit' })) }
      : { status: 404, body: { message: 'Not Found' } };
  }
  return { status: 404, body: { message: 'Not Found' } };
}

/** GitHub's combined state: failure on any error or failure, pending on none or any pending, else success. */
const combinedState = (statuses: GitHubCommitStatus[]) =>
  statuses.some((s) => s.state === 'failure' || s.state === 'error')
    ? 'failure'
    : !statuses.length || statuses.some((s) => s.state === 'pending')
      ? 'pending'
      : 'success';

export async function startFakeGitHub(token: () => string): Promise<FakeGitHub> {
  const pulls = new Map<string, FakePull>();
  const requests: FakeGitHub['requests'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as unknown) : undefined;
      const send = (status: number, payload: unknown) => {
        const text = JSON.stringify(payload);
        const etag = `"${createHash('sha1').update(text).digest('hex')}"`;
        const notModified = req.method === 'GET' && status === 200 && req.headers['if-none-match'] === etag;
        requests.push({
          method: req.method!,
          path: url.pathname,
          status: notModified ? 304 : status,
          authorization: req.headers.authorization,
          body,
        });
        res.writeHead(notModified ? 304 : status, { 'content-type': 'application/json', etag });
        res.end(notModified ? undefined : text);
      };
      if (req.headers.authorization !== `Bearer ${token()}`) return send(401, { message: 'Bad credentials' });
      if (fake.rateLimitedUntil) {
        res.setHeader('x-ratelimit-remaining', '0');
        res.setHeader('x-ratelimit-reset', String(fake.rateLimitedUntil));
        return send(403, { message: 'API rate limit exceeded' });
      }
      const [, repos, owner, repo, kind, ...rest] = url.pathname.split('/');
      if (repos !== 'repos' || !owner || !repo) return send(404, { message: 'Not Found' });
      if (kind === 'commits' && rest[1] === 'check-runs') {
        const runs = [...pulls.values()].flatMap((p) => p.checkRuns).filter((r) => r.head_sha === rest[0]);
        return send(200, { total_count: runs.length, check_runs: runs });
      }
      if (kind === 'commits' && rest[1] === 'status') {
        const statuses = [...pulls.values()].filter((p) => p.head.sha === rest[0]).flatMap((p) => p.statuses);
        return send(200, { state: combinedState(statuses), total_count: statuses.length, statuses, sha: rest[0] });
      }
      const pull = kind === 'pulls' ? pulls.get(pullKey(owner, repo, Number(rest[0]))) : undefined;
      if (!pull) return send(404, { message: 'Not Found' });
      if (req.method === 'PUT' && rest[1] === 'merge') {
        const sha = (body as { sha?: string }).sha;
        if (sha !== pull.head.sha)
          return send(409, { message: 'Head branch was modified. Review and try the merge again.' });
        if (!pull.mergeable) return send(405, { message: 'Pull Request is not mergeable' });
        Object.assign(pull, { merged: true, state: 'closed', mergeable: null });
        return send(200, { merged: true, sha: 'f00dfeed'.repeat(5), message: 'Pull Request successfully merged' });
      }
      const reply = answer(pull, rest.slice(1));
      send(reply.status, reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fake: FakeGitHub = {
    url: `http://127.0.0.1:${port}`,
    pulls,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  return fake;
}

/** The relay's in-memory records, counting writes (the poll must write nothing when nothing changed). */
export class RecordsInMemory extends MemoryPullRecords {
  writes = 0;

  add(record: PullRecord): void {
    void this.update(record.owner, record.repo, record.number, () => record);
    this.writes = 0;
  }

  override update(...args: Parameters<MemoryPullRecords['update']>) {
    this.writes += 1;
    return super.update(...args);
  }
}

/** A record of acme/web#number as the relay keeps it, without a known head unless given. */
export const pullRecord = (number: number, more: Partial<PullRecord> = {}): PullRecord =>
  fixtureRecord({ number, url: `https://github.example/acme/web/pull/${number}`, headSha: undefined, ...more });
