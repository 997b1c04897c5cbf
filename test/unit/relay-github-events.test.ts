// GitHub payloads → PullEvents: what each event says, and hostile shapes reduced to nothing.
import { describe, expect, it } from 'vitest';
import { EXCERPT_CHARS, EXCERPT_LINES, eventsOf } from '../../relay/github/events.ts';
import { HEAD, NEXT_HEAD, payloads } from './github-fixtures.ts';

const where = { owner: 'acme', repo: 'web', number: 7 };

describe('eventsOf', () => {
  it('a failing check run: one checksFailed per pull request it names, keyed by run and head', () => {
    expect(eventsOf('check_run', payloads.checkFailed())).toEqual([
      {
        ...where,
        key: `check_run:101:${HEAD}`,
        kind: 'checksFailed',
        headSha: HEAD,
        checks: [{ id: 101, name: 'ci / lint', excerpt: 'Lint failed\nsrc/nav.ts:3 missing semicolon\nsecond line' }],
      },
    ]);
  });

  it.each(['failure', 'timed_out', 'cancelled', 'action_required'])('conclusion %s is a failure', (conclusion) => {
    const payload = payloads.checkFailed();
    payload.check_run.conclusion = conclusion;
    expect(eventsOf('check_run', payload)).toHaveLength(1);
  });

  it.each(['success', 'neutral', 'skipped', 'stale'])('conclusion %s is not told', (conclusion) => {
    const payload = payloads.checkFailed();
    payload.check_run.conclusion = conclusion;
    expect(eventsOf('check_run', payload)).toEqual([]);
  });

  it('a check suite completed with success: checksPassed on its head', () => {
    expect(eventsOf('check_suite', payloads.suitePassed())).toEqual([
      { ...where, key: `check_suite:55:${NEXT_HEAD}`, kind: 'checksPassed', headSha: NEXT_HEAD },
    ]);
  });

  it(`reviews: changes requested, commented (an empty comment too: its line comments are counted by the \
notifier); an approval is not told`, () => {
    const [changes] = eventsOf('pull_request_review', payloads.review());
    expect(changes).toEqual({
      ...where,
      key: 'review:9001',
      kind: 'changesRequested',
      headSha: HEAD,
      reviewId: 9001,
      reviewer: 'octocat',
      gist: 'Please rename the helper.',
      comments: 0,
    });
    expect(eventsOf('pull_request_review', payloads.review({ state: 'commented' }))[0]!.kind).toBe('reviewComments');
    expect(eventsOf('pull_request_review', payloads.review({ state: 'CHANGES_REQUESTED' }))).toHaveLength(1);
    expect(eventsOf('pull_request_review', payloads.review({ state: 'approved' }))).toEqual([]);
    expect(eventsOf('pull_request_review', payloads.review({ state: 'commented', body: '  \n' }))).toMatchObject([
      { kind: 'reviewComments', gist: '', comments: 0 },
    ]);
  });

  it('pull_request: closed and merged, closed, synchronize', () => {
    expect(eventsOf('pull_request', payloads.closed(true))).toEqual([
      { ...where, key: 'closed:2026-11-27T01:00:00Z', kind: 'merged', by: 'octocat' },
    ]);
    expect(eventsOf('pull_request', payloads.closed(false))[0]).toMatchObject({ kind: 'closed', by: 'octocat' });
    expect(eventsOf('pull_request', payloads.synchronize())).toEqual([
      { ...where, key: `head:${NEXT_HEAD}`, kind: 'headMoved', headSha: NEXT_HEAD },
    ]);
    expect(eventsOf('pull_request', { ...payloads.synchronize(), action: 'opened' })).toEqual([]);
  });

  it('keeps only the first lines of long output', () => {
    const summary = Array.from({ length: 500 }, (_, i) => `line ${i} ${'x'.repeat(50)}`).join('\n');
    const [event] = eventsOf('check_run', payloads.checkFailed({ summary }));
    const { excerpt } = (event as { checks: Array<{ excerpt: string }> }).checks[0]!;
    expect(excerpt.length).toBeLessThanOrEqual(EXCERPT_CHARS);
    expect(excerpt.split('\n').length).toBeLessThanOrEqual(EXCERPT_LINES);
    expect(excerpt).toMatch(/^Lint failed\nline 0 /);
  });

  it.each([
    ['no payload', 'check_run', null],
    ['an array', 'check_run', []],
    ['an event it does not know', '__proto__', payloads.checkFailed()],
    ['a constructor name', 'constructor', payloads.checkFailed()],
    ['no repository', 'check_run', { ...payloads.checkFailed(), repository: undefined }],
    ['an owner login with a slash', 'check_run', payloads.checkFailed({ owner: '../evil' })],
    ['a repository name with a dot-dot path', 'check_run', payloads.checkFailed({ repo: 'a/../b' })],
    ['a head that is not a commit id', 'check_run', payloads.checkFailed({ sha: 'HEAD; rm -rf /' })],
    ['a pull request number 0', 'check_run', payloads.checkFailed({ number: 0 })],
    ['a fractional run id', 'check_run', payloads.checkFailed({ id: 1.5 })],
    ['a string run id', 'check_run', payloads.checkFailed({ id: '101' as unknown as number })],
    ['a review without an id', 'pull_request_review', { ...payloads.review(), review: { state: 'changes_requested' } }],
  ])('%s: no event', (_, name, payload) => {
    expect(eventsOf(name, payload)).toEqual([]);
  });

  it('a reviewer or merger login that is not a login is left out, not shown', () => {
    const [review] = eventsOf('pull_request_review', payloads.review({ login: '*bold* <x>' }));
    expect(review).toMatchObject({ reviewer: '' });
    const merged = payloads.closed(true);
    merged.pull_request.merged_by = { login: 'x'.repeat(40) };
    expect(eventsOf('pull_request', merged)[0]).toMatchObject({ kind: 'merged', by: undefined });
  });

  it('at most 10 pull requests per check run, each once', () => {
    const payload = payloads.checkFailed();
    payload.check_run.pull_requests = Array.from({ length: 50 }, (_, i) => ({
      number: (i % 20) + 1,
      head: { ref: 'x', sha: HEAD },
    }));
    expect(eventsOf('check_run', payload).map((e) => e.number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });
});
