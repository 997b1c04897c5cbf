// The GitHub stand-in's pull requests over a real forge: heads read from the bare repository,
// pushes as `synchronize`, reviewers, close, ETags, and merges done with git after GitHub's checks.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../local/github/store.ts';
import { startGitHubWorkbench, type GitHubWorkbench } from '../../local/github/workbench.ts';

let bench: GitHubWorkbench;
beforeEach(async () => {
  bench = await startGitHubWorkbench({ webhookSecret: 'hook-secret' });
});
afterEach(() => bench.close());

const api = (path: string, init: RequestInit & { json?: unknown } = {}) =>
  fetch(`${bench.github.url}/repos/acme/sample${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${bench.token}`,
      ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.headers as Record<string, string>),
    },
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
  });
const json = async (response: Response) => ({
  status: response.status,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- GitHub's JSON, read field by field
  body: (await response.json()) as any,
});

async function openPull(branch = 'tether/one', files: Record<string, string> = { 'notes.txt': 'one\n' }) {
  const sha = await bench.push(branch, files);
  const created = await json(
    await api('/pulls', { method: 'POST', json: { title: 'Notes', head: branch, base: 'main' } }),
  );
  expect(created.status).toBe(201);
  return { number: created.body.number as number, sha };
}

const received = async (event: string, action?: string) => {
  await bench.github.deliveriesSettled();
  return bench.receiver!.received.filter((r) => r.event === event && (!action || r.action === action));
};

describe('the GitHub stand-in: pull requests', () => {
  it(`opens a pull request on a pushed branch with its head read from the bare repository, and says so \
signed`, async () => {
    const { number, sha } = await openPull();
    const got = await json(await api(`/pulls/${number}`));
    expect(got.body).toMatchObject({
      number: 1,
      state: 'open',
      merged: false,
      head: { ref: 'tether/one', sha },
      base: { ref: 'main', sha: await bench.sha('main') },
      mergeable: true,
      mergeable_state: 'clean',
      commits: 1,
      additions: 1,
      changed_files: 1,
    });
    const [opened] = await received('pull_request', 'opened');
    expect(opened).toMatchObject({ signed: true, payload: { number: 1, repository: { full_name: 'acme/sample' } } });
    expect(bench.github.pulls[0]).toMatchObject({ owner: 'acme', repo: 'sample', head: 'tether/one', base: 'main' });
  });

  it(`refuses a head that is not there, a second pull request for the same branch, and one with no \
commits`, async () => {
    const missing = await json(
      await api('/pulls', { method: 'POST', json: { title: 't', head: 'nope', base: 'main' } }),
    );
    expect(missing).toMatchObject({ status: 422, body: { errors: [{ field: 'head', code: 'invalid' }] } });
    await openPull();
    const again = await json(
      await api('/pulls', { method: 'POST', json: { title: 't', head: 'acme:tether/one', base: 'main' } }),
    );
    expect(again.body.errors[0].message).toBe('A pull request already exists for acme:tether/one.');
    const empty = await json(await api('/pulls', { method: 'POST', json: { title: 't', head: 'main', base: 'main' } }));
    expect(empty.body.errors[0].message).toBe('No commits between main and main');
    const elsewhere = await fetch(`${bench.github.url}/repos/acme/nothing/pulls`, {
      headers: { authorization: `Bearer ${bench.token}` },
    });
    expect(elsewhere.status).toBe(404);
    // A bare repository beside the forge's root is not the stand-in's: `..` is no owner.
    const root = dirname(dirname(bench.bare));
    execFileSync('git', ['init', '--quiet', '--bare', join(dirname(root), 'outside.git')]);
    expect(new Store({ root }).repository('..', 'outside')).toBeUndefined();
    const undecodable = await fetch(`${bench.github.url}/repos/%E0%A4%A/sample/pulls`, {
      headers: { authorization: `Bearer ${bench.token}` },
    });
    expect(undecodable.status).toBe(404);
    expect((await api('/commits/%E0%A4%A/check-runs')).status).toBe(404);
    expect((await json(await api(''))).body).toMatchObject({ full_name: 'acme/sample', default_branch: 'main' });
  });

  it(`turns a push to the branch into synchronize with before and after, and lists pulls by state and \
head`, async () => {
    const { number, sha } = await openPull();
    const next = await bench.push('tether/one', { 'notes.txt': 'two\n' });
    const [sync] = await received('pull_request', 'synchronize');
    expect(sync!.payload).toMatchObject({ number, before: sha, after: next, pull_request: { head: { sha: next } } });
    const listed = await json(await api('/pulls?state=open&head=acme:tether/one'));
    expect(listed.body.map((p: { number: number }) => p.number)).toEqual([number]);
    expect((await json(await api('/pulls?state=closed'))).body).toEqual([]);
  });

  it(`answers 304 to a GET whose If-None-Match names the same body, and 200 with a new ETag once it \
changed`, async () => {
    const { number } = await openPull();
    const first = await api(`/pulls/${number}`);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"/);
    const again = await api(`/pulls/${number}`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    await bench.push('tether/one', { 'notes.txt': 'changed\n' });
    const changed = await api(`/pulls/${number}`, { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(bench.github.requests.map((r) => r.status)).toContain(304);
  });

  it("counts each token's requests an hour, not 304s, and refuses once the hour is spent until its reset", async () => {
    const { number } = await openPull();
    const first = await api(`/pulls/${number}`);
    const used = Number(first.headers.get('x-ratelimit-used'));
    const cached = await api(`/pulls/${number}`, { headers: { 'if-none-match': first.headers.get('etag')! } });
    expect(cached.status).toBe(304);
    expect(Number(cached.headers.get('x-ratelimit-used'))).toBe(used);
    bench.github.setRateLimit(used + 1);
    const last = await api(`/pulls/${number}`);
    expect([last.status, last.headers.get('x-ratelimit-remaining')]).toEqual([200, '0']);
    const spent = await json(await api(`/pulls/${number}`));
    expect(spent).toMatchObject({ status: 403, body: { message: expect.stringMatching(/^API rate limit exceeded/) } });
    const reset = Number(last.headers.get('x-ratelimit-reset')) * 1000;
    bench.github.clock.advance(reset - bench.github.clock.now() + 1000);
    expect((await api(`/pulls/${number}`)).status).toBe(200);
  });

  it('requests reviewers (not the author, only collaborators once set) and closes and reopens', async () => {
    const { number } = await openPull();
    const asked = await json(
      await api(`/pulls/${number}/requested_reviewers`, { method: 'POST', json: { reviewers: ['ada'] } }),
    );
    expect(asked).toMatchObject({ status: 201, body: { requested_reviewers: [{ login: 'ada' }] } });
    const self = await json(
      await api(`/pulls/${number}/requested_reviewers`, { method: 'POST', json: { reviewers: ['tether-bot'] } }),
    );
    expect(self).toMatchObject({
      status: 422,
      body: { message: 'Review cannot be requested from pull request author.' },
    });
    bench.github.setCollaborators('acme', 'sample', ['ada']);
    const stranger = await api(`/pulls/${number}/requested_reviewers`, {
      method: 'POST',
      json: { reviewers: ['eve'] },
    });
    expect(stranger.status).toBe(422);
    expect((await json(await api(`/pulls/${number}/requested_reviewers`))).body.users).toEqual([
      expect.objectContaining({ login: 'ada' }),
    ]);
    const closed = await json(await api(`/pulls/${number}`, { method: 'PATCH', json: { state: 'closed' } }));
    expect(closed.body).toMatchObject({ state: 'closed', merged: false });
    await api(`/pulls/${number}`, { method: 'PATCH', json: { state: 'open' } });
    expect((await received('pull_request')).map((r) => r.action)).toEqual([
      'opened',
      'review_requested',
      'closed',
      'reopened',
    ]);
  });
});

describe('the GitHub stand-in: merge', () => {
  it(`merges for real in the bare repository: a merge commit of base and head, the pull request closed and \
merged`, async () => {
    const { number, sha } = await openPull();
    const base = await bench.sha('main');
    const merged = await json(await api(`/pulls/${number}/merge`, { method: 'PUT', json: { sha } }));
    expect(merged).toMatchObject({ status: 200, body: { merged: true, message: 'Pull Request successfully merged' } });
    expect(await bench.sha('main')).toBe(merged.body.sha);
    const parents = execFileSync('git', ['--git-dir', bench.bare, 'log', '-1', '--format=%P', 'main'], {
      encoding: 'utf8',
    });
    expect(parents.trim().split(' ')).toEqual([base, sha]);
    expect(execFileSync('git', ['--git-dir', bench.bare, 'show', 'main:notes.txt'], { encoding: 'utf8' })).toBe(
      'one\n',
    );
    const [closed] = await received('pull_request', 'closed');
    expect(closed!.payload.pull_request).toMatchObject({
      merged: true,
      merge_commit_sha: merged.body.sha,
      state: 'closed',
    });
    expect((await api(`/pulls/${number}/merge`)).status).toBe(204);
    expect((await json(await api(`/pulls/${number}/merge`, { method: 'PUT', json: {} }))).status).toBe(405);
  });

  it(`answers 409 when the sha is no longer the head, and 405 while a required check is missing, running or \
red`, async () => {
    const { number, sha } = await openPull();
    const moved = await bench.push('tether/one', { 'notes.txt': 'moved\n' });
    const stale = await json(await api(`/pulls/${number}/merge`, { method: 'PUT', json: { sha } }));
    expect(stale).toMatchObject({
      status: 409,
      body: { message: 'Head branch was modified. Review and try the merge again.' },
    });
    bench.github.requireChecks('acme', 'sample', ['ci']);
    const merge = async () => json(await api(`/pulls/${number}/merge`, { method: 'PUT', json: { sha: moved } }));
    expect((await merge()).body.message).toBe('Required status check "ci" is expected.');
    const run = await bench.github.createCheckRun('acme', 'sample', {
      headSha: moved,
      name: 'ci',
      status: 'in_progress',
    });
    expect((await merge()).body.message).toBe('Required status check "ci" is in progress.');
    expect((await json(await api(`/pulls/${number}`))).body.mergeable_state).toBe('blocked');
    await bench.github.updateCheckRun('acme', 'sample', run.id, { conclusion: 'failure' });
    expect(await merge()).toMatchObject({ status: 405, body: { message: 'Required status check "ci" is failing.' } });
    await bench.github.createCheckRun('acme', 'sample', { headSha: moved, name: 'ci', conclusion: 'success' });
    expect((await merge()).status).toBe(200);
  });

  it('answers 405 on a conflict with the base, and when a test says it is not mergeable', async () => {
    const { number } = await openPull('tether/one', { 'README.md': 'ours\n' });
    await bench.push('main', { 'README.md': 'theirs\n' });
    const pull = await json(await api(`/pulls/${number}`));
    expect(pull.body).toMatchObject({ mergeable: false, mergeable_state: 'dirty' });
    expect(await json(await api(`/pulls/${number}/merge`, { method: 'PUT', json: {} }))).toMatchObject({
      status: 405,
      body: { message: 'Pull Request is not mergeable' },
    });
    const other = await openPull('tether/two', { 'other.txt': 'x\n' });
    bench.github.setMergeable('acme', 'sample', other.number, false);
    expect((await api(`/pulls/${other.number}/merge`, { method: 'PUT', json: {} })).status).toBe(405);
    bench.github.setMergeable('acme', 'sample', other.number, undefined);
    expect(
      (await json(await api(`/pulls/${other.number}/merge`, { method: 'PUT', json: { merge_method: 'squash' } })))
        .status,
    ).toBe(200);
    const parents = execFileSync('git', ['--git-dir', bench.bare, 'log', '-1', '--format=%P', 'main'], {
      encoding: 'utf8',
    });
    expect(parents.trim().split(' ')).toHaveLength(1);
  });
});
