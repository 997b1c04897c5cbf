// The relay signs only a Session's own media, remembers token reviews briefly and boundedly, and
// limits uploads per source and per runner.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { SessionDefaults } from '../../common/session/defaults.ts';
import { runnerName, RUNNER_IDENTITY_PREFIX } from '../../common/session/names.ts';
import type { Media, Session } from '../../common/session/schema.ts';
import { CachedTokenAuthorizer } from '../../relay/media/auth.ts';
import { RateLimiter } from '../../relay/rate-limit.ts';
import { foreignRefAuditor, foreignRefs, isOwnMedia } from '../../relay/media/refs.ts';
import { owed } from '../../relay/outbound/owed.ts';

const defaults: SessionDefaults = { maxQueued: 3, timeouts: { run: '2h', approval: '30m' } };

function withMedia(media: Media[]): Session {
  return {
    apiVersion: 'tether.dev/v1alpha1',
    kind: 'Session',
    metadata: { namespace: 'tether', name: 'abc-1', uid: 'u1' },
    spec: { phone: '+14155550123', prompt: 'p', repo: { url: 'x' }, workspace: 'w' },
    status: {
      phase: 'Succeeded',
      pending: undefined,
      result: { media },
    },
  };
}

const shot = (ref: string): Media => ({ kind: 'screenshot', ref, contentType: 'image/jpeg' });
const FORGED = [
  'tether/abc-2/screenshot-1.jpg', // another Session's
  'other/abc-1/screenshot-1.jpg', // another namespace
  'tether/abc-1/../abc-2/screenshot-1.jpg',
  'tether/abc-10/screenshot-1.jpg', // a Session whose name starts with this one's
  'tether/abc-1/screenshot-1.jpg/../../abc-2/x.jpg',
  'tether/abc-1/%2e%2e/abc-2/x.jpg',
  'tether/abc-1/nested/x.jpg',
  'https://attacker.example/x.jpg',
];

describe('media refs a Session may have signed', () => {
  it('accepts its own refs and workspace files are not relay media', () => {
    const session = withMedia([]);
    expect(isOwnMedia(session, shot('tether/abc-1/screenshot-1.jpg'))).toBe(true);
    expect(isOwnMedia(session, shot('file:media/abc-1/screenshot-1.jpg'))).toBe(false);
  });

  it.each(FORGED)('refuses the forged ref %s', (ref) => {
    expect(isOwnMedia(withMedia([]), shot(ref))).toBe(false);
    expect(foreignRefs(withMedia([shot(ref)]))).toEqual([ref]);
  });

  it("plans only the Session's own images and logs each forged one once", () => {
    const session = withMedia([shot('tether/abc-1/screenshot-1.jpg'), ...FORGED.map(shot)]);
    const { parts } = owed(
      session,
      { n: 1, seq: 0, started: true },
      { now: Date.now(), progressBatchMs: 0, reminderBeforeMs: 60_000, defaults },
    );
    expect(parts.filter((p) => p.media).map((p) => p.media!.ref)).toEqual(['tether/abc-1/screenshot-1.jpg']);

    const lines: { ref: string; msg: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const audit = foreignRefAuditor(logger);
    audit('tether/abc-1', session);
    audit('tether/abc-1', session);
    expect(lines.map((l) => l.ref)).toEqual(FORGED);
    expect(lines[0]!.msg).toMatch(/refused to sign/);
  });
});

describe('token reviews', () => {
  it(`asks once per token while the answer is fresh, \
good or bad, and shares one review among concurrent checks`, async () => {
    const reviewed: string[] = [];
    let now = 1_000_000;
    const authorizer = new CachedTokenAuthorizer(
      async (token) => {
        reviewed.push(token);
        await new Promise((r) => setTimeout(r, 20));
        return token === 'good'
          ? { user: `system:serviceaccount:runners:${RUNNER_IDENTITY_PREFIX}abc`, pod: runnerName('s1') }
          : undefined;
      },
      { okTtlMs: 60_000, failureTtlMs: 300, maxEntries: 2 },
      'runners',
      'ns',
      () => now,
    );
    const answers = await Promise.all(
      [...Array(50)].map((_, i) => authorizer.mayUpload(i % 2 ? 'good' : 'bad', 'ns', 's1')),
    );
    expect(answers.filter(Boolean)).toHaveLength(25);
    expect(reviewed).toEqual(['bad', 'good']);
    expect(await authorizer.mayUpload('good', 'ns', 's2')).toBe(false); // the right token for another Session
    expect(reviewed).toHaveLength(2);
    now += 300;
    await authorizer.mayUpload('bad', 'ns', 's1');
    expect(reviewed).toHaveLength(2); // the refusal is still fresh
    now += 1; // the refusal expired, the success did not
    await authorizer.mayUpload('bad', 'ns', 's1');
    await authorizer.mayUpload('good', 'ns', 's1');
    expect(reviewed).toEqual(['bad', 'good', 'bad']);
    expect(await authorizer.mayUpload('', 'ns', 's1')).toBe(false);
    expect(reviewed).toHaveLength(3);
  });

  it("refuses a runner's own token for a Session path under any namespace but the Sessions'", async () => {
    const authorizer = new CachedTokenAuthorizer(
      async () => ({ user: `system:serviceaccount:runners:${RUNNER_IDENTITY_PREFIX}abc`, pod: runnerName('s1') }),
      { okTtlMs: 60_000, failureTtlMs: 300, maxEntries: 2 },
      'runners',
      'ns',
    );
    expect(await authorizer.mayUpload('good', 'ns', 's1')).toBe(true);
    expect(await authorizer.mayUpload('good', 'other-ns', 's1')).toBe(false);
    expect(await authorizer.mayUpload('good', 'runners', 's1')).toBe(false);
  });

  it(`takes the token of the Pod the Session's status names (a live Pod bound to it, a replacement), no \
other`, async () => {
    const pods: Record<string, string> = { 'tok-live': 'first-runner', 'tok-s2': runnerName('s2') };
    const authorizer = new CachedTokenAuthorizer(
      async (token) => ({ user: `system:serviceaccount:runners:${RUNNER_IDENTITY_PREFIX}abc`, pod: pods[token] }),
      { okTtlMs: 60_000, failureTtlMs: 300, maxEntries: 10 },
      'runners',
      'ns',
      Date.now,
      (namespace, session) => (namespace === 'ns' && session === 's2' ? 'first-runner' : undefined),
    );
    expect(await authorizer.mayUpload('tok-live', 'ns', 's2')).toBe(true);
    // The Pod named after the Session is not its runner once its status names another one.
    expect(await authorizer.mayUpload('tok-s2', 'ns', 's2')).toBe(false);
    // The live Pod's token is no key to a Session bound elsewhere (or not yet known with a Pod).
    expect(await authorizer.mayUpload('tok-live', 'ns', 's3')).toBe(false);
  });

  it('keeps at most its bound of answers, dropping the least recently used', async () => {
    const reviewed: string[] = [];
    const authorizer = new CachedTokenAuthorizer(
      async (token) => void reviewed.push(token),
      { okTtlMs: 60_000, failureTtlMs: 60_000, maxEntries: 3 },
      'runners',
      'ns',
      () => 0,
    );
    for (const token of ['a', 'b', 'c', 'a', 'd', 'a', 'c', 'b']) await authorizer.mayUpload(token, 'ns', 's1');
    expect(reviewed).toEqual(['a', 'b', 'c', 'd', 'b']);
  });
});

describe('upload rate', () => {
  it('allows the rate per key, refills evenly, and keeps keys apart', () => {
    let now = 0;
    const limiter = new RateLimiter({ count: 6, periodMs: 60_000, now: () => now, maxKeys: 2 });
    const taken = [...Array(8)].map(() => limiter.take('10.0.0.1'));
    expect(taken.filter(Boolean)).toHaveLength(6);
    expect(limiter.take('10.0.0.2')).toBe(true);
    now = 9_000;
    expect(limiter.take('10.0.0.1')).toBe(false); // refilled 0.9 of one
    now = 10_000;
    expect(limiter.take('10.0.0.1')).toBe(true);
  });

  it('paces a sender: the first at once, then one per period/count in turn; a quiet spell saves only the burst', () => {
    let now = 0;
    const pace = new RateLimiter({ count: 4, periodMs: 1000, burst: 1, now: () => now });
    expect([pace.reserve(), pace.reserve(), pace.reserve()]).toEqual([0, 250, 500]);
    now = 600; // the next turn is at 750
    expect([pace.reserve(), pace.reserve()].map(Math.round)).toEqual([150, 400]);
    now = 10_000;
    expect([pace.reserve(), pace.reserve()]).toEqual([0, 250]);
  });
});
