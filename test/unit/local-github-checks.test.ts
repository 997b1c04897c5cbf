// The GitHub stand-in's check runs, suites, commit statuses, reviews and review comments, over a real forge, and
// the webhook deliveries they make.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startGitHubWorkbench, type GitHubWorkbench } from '../../local/github/workbench.ts';

let bench: GitHubWorkbench;
let number: number;
let head: string;
beforeEach(async () => {
  bench = await startGitHubWorkbench({ webhookSecret: 'hook-secret' });
  head = await bench.push('tether/one', { 'notes.txt': 'one\n' });
  ({ number } = await bench.github.createPull('acme', 'sample', { title: 'Notes', head: 'tether/one', base: 'main' }));
});
afterEach(() => bench.close());

const get = async (path: string) => {
  const response = await fetch(`${bench.github.url}/repos/acme/sample${path}`, {
    headers: { authorization: `Bearer ${bench.token}` },
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- GitHub's JSON, read field by field
  return { status: response.status, body: (await response.json()) as any };
};
const post = (path: string, json: unknown, method = 'POST') =>
  fetch(`${bench.github.url}/repos/acme/sample${path}`, {
    method,
    headers: { authorization: `Bearer ${bench.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(json),
  });
const events = async () => {
  await bench.github.deliveriesSettled();
  return bench.receiver!.received.map((r) => `${r.event}:${r.action}`);
};

describe('the GitHub stand-in: check runs and suites', () => {
  it('serves a failing run by id and by commit, with its output, and delivers check_run and check_suite', async () => {
    const output = { title: '2 tests failed', summary: 'greet.test.js: expected Hello', text: 'at line 4\n...' };
    const run = await bench.github.createCheckRun('acme', 'sample', {
      headSha: head,
      name: 'test',
      conclusion: 'failure',
      output,
    });
    const byId = await get(`/check-runs/${run.id}`);
    expect(byId.body).toMatchObject({
      id: run.id,
      name: 'test',
      head_sha: head,
      status: 'completed',
      conclusion: 'failure',
      output,
    });
    expect(byId.body.pull_requests).toEqual([
      expect.objectContaining({ number, head: expect.objectContaining({ sha: head }) }),
    ]);
    for (const ref of [head, encodeURIComponent('tether/one')]) {
      const atCommit = await get(`/commits/${ref}/check-runs`);
      expect(atCommit.body).toMatchObject({ total_count: 1, check_runs: [{ id: run.id }] });
    }
    expect(await events()).toEqual([
      'pull_request:opened',
      'check_run:created',
      'check_run:completed',
      'check_suite:completed',
    ]);
    const suite = bench.receiver!.received.at(-1)!.payload.check_suite;
    expect(suite).toMatchObject({ head_sha: head, head_branch: 'tether/one', conclusion: 'failure' });
    expect((await get(`/check-suites/${(suite as { id: number }).id}`)).body.conclusion).toBe('failure');
    expect((await get(`/commits/${head}/check-suites`)).body).toMatchObject({ total_count: 1, check_suites: [suite] });
  });

  it(`completes a suite only when its last run completes, with the worst conclusion, and shows the latest run \
per name`, async () => {
    const lint = await bench.github.createCheckRun('acme', 'sample', {
      headSha: head,
      name: 'lint',
      status: 'in_progress',
    });
    await bench.github.createCheckRun('acme', 'sample', { headSha: head, name: 'test', conclusion: 'success' });
    expect((await events()).filter((e) => e.startsWith('check_suite'))).toEqual([]);
    const patched = await post(`/check-runs/${lint.id}`, { conclusion: 'timed_out' }, 'PATCH');
    expect(patched.status).toBe(200);
    const suites = bench.receiver!.received.filter((r) => r.event === 'check_suite');
    await bench.github.deliveriesSettled();
    expect(bench.receiver!.received.filter((r) => r.event === 'check_suite').length).toBe(suites.length + 1);
    expect(bench.receiver!.received.at(-1)!.payload.check_suite).toMatchObject({ conclusion: 'timed_out' });
    await bench.github.createCheckRun('acme', 'sample', { headSha: head, name: 'lint', conclusion: 'success' });
    await bench.github.deliveriesSettled();
    expect(
      (await get(`/commits/${head}/check-runs`)).body.check_runs.map(
        (r: { name: string; conclusion: string }) => `${r.name}:${r.conclusion}`,
      ),
    ).toEqual(['test:success', 'lint:success']);
    expect((await get(`/commits/${head}/check-runs?filter=all`)).body.total_count).toBe(3);
    expect(bench.receiver!.received.at(-1)!.payload.check_suite).toMatchObject({ conclusion: 'success' });
  });

  it('creates runs over REST and refuses a bad conclusion, a missing name and an unknown commit', async () => {
    const created = await post('/check-runs', { name: 'ci', head_sha: head, status: 'queued' });
    expect(created.status).toBe(201);
    expect((await post('/check-runs', { name: 'ci', head_sha: head, conclusion: 'green' })).status).toBe(422);
    expect((await post('/check-runs', { head_sha: head })).status).toBe(422);
    expect((await post('/check-runs', { name: 'ci', head_sha: 'f'.repeat(40) })).status).toBe(422);
    expect((await get('/commits/nope/check-runs')).status).toBe(422);
    expect((await get('/check-runs/424242')).status).toBe(404);
  });
});

describe('the GitHub stand-in: reviews', () => {
  it(`serves a submitted review with its comments, and delivers pull_request_review with the state in lower \
case`, async () => {
    const review = await bench.github.submitReview('acme', 'sample', number, {
      user: 'ada',
      state: 'changes_requested',
      body: 'Please rename it',
      comments: [{ path: 'notes.txt', line: 1, body: 'a better word?' }],
    });
    expect((await get(`/pulls/${number}/reviews/${review.id}`)).body).toMatchObject({
      id: review.id,
      user: { login: 'ada' },
      state: 'CHANGES_REQUESTED',
      body: 'Please rename it',
      commit_id: head,
    });
    const comments = (await get(`/pulls/${number}/reviews/${review.id}/comments`)).body;
    expect(comments).toEqual([
      expect.objectContaining({
        pull_request_review_id: review.id,
        path: 'notes.txt',
        line: 1,
        body: 'a better word?',
      }),
    ]);
    expect((await get(`/pulls/${number}/comments`)).body).toHaveLength(1);
    expect((await get(`/pulls/${number}/reviews`)).body).toHaveLength(1);
    await bench.github.deliveriesSettled();
    const delivered = bench.receiver!.received.find((r) => r.event === 'pull_request_review')!;
    expect(delivered.payload).toMatchObject({
      action: 'submitted',
      review: { id: review.id, state: 'changes_requested', user: { login: 'ada' } },
      pull_request: { number },
    });
  });

  it(`takes a review over REST as the token’s user, and refuses an unknown event or a review of another \
number`, async () => {
    const ok = await post(`/pulls/${number}/reviews`, { event: 'COMMENT', body: 'looks fine', comments: [] });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { state: string; user: { login: string } }).user.login).toBe('tether-bot');
    expect((await post(`/pulls/${number}/reviews`, { event: 'SHRUG', body: 'x' })).status).toBe(422);
    expect((await get(`/pulls/${number}/reviews/999999`)).status).toBe(404);
    expect((await post('/pulls/77/reviews', { event: 'APPROVE' })).status).toBe(404);
  });
});

describe('the GitHub stand-in: commit statuses', () => {
  const status = async (ref: string, query = '') => (await get(`/commits/${ref}/status${query}`)).body;

  it('combines each context’s newest status: none is pending, any failure fails, all success succeeds', async () => {
    expect(await status(head)).toMatchObject({ state: 'pending', total_count: 0, statuses: [], sha: head });
    const made = await post(`/statuses/${head}`, { state: 'pending', context: 'ci/jenkins', description: 'running' });
    expect(made.status).toBe(201);
    expect(await made.json()).toMatchObject({
      state: 'pending',
      context: 'ci/jenkins',
      creator: { login: 'tether-bot' },
    });
    await bench.github.createStatus('acme', 'sample', head, { state: 'success', context: 'ci/lint' });
    expect(await status('tether/one')).toMatchObject({ state: 'pending', total_count: 2 });
    await bench.github.createStatus('acme', 'sample', head, { state: 'error', context: 'ci/jenkins' });
    const failing = await status(head);
    expect(failing).toMatchObject({ state: 'failure', total_count: 2 });
    expect(failing.statuses.map((s: { context: string; state: string }) => `${s.context}:${s.state}`)).toEqual([
      'ci/jenkins:error',
      'ci/lint:success',
    ]);
    await bench.github.createStatus('acme', 'sample', head, { state: 'success', context: 'ci/jenkins' });
    expect(await status(head)).toMatchObject({ state: 'success', total_count: 2 });
    expect(await status(head, '?per_page=1&page=2')).toMatchObject({
      state: 'success',
      statuses: [{ context: 'ci/lint' }],
    });
  });

  it('refuses a status with no or a made-up state, or on a commit it does not have', async () => {
    expect((await post(`/statuses/${head}`, { context: 'ci' })).status).toBe(422);
    expect((await post(`/statuses/${head}`, { state: 'green' })).status).toBe(422);
    expect((await post(`/statuses/${'f'.repeat(40)}`, { state: 'success' })).status).toBe(422);
    expect((await get('/commits/nope/status')).status).toBe(422);
  });
});
