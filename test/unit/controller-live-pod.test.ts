// The keep-alive as pure decisions: which waiting Session binds the phone's live runner Pod, which
// idle Pods go first, and when a finished Session's Pod is released.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { Phase, Session } from '../../common/session/schema.ts';
import { desiredPod } from '../../controller/builders.ts';
import { decideTerminal } from '../../controller/cleanup.ts';
import { decide, type Observed } from '../../controller/decide.ts';
import { PHONE, testSession, unitConfig } from './controller-fixtures.ts';
import { fakeWorld } from './controller-fake-cluster.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const at = (s: number) => new Date(Date.parse('2026-11-22T08:00:00Z') + s * 1000).toISOString();
const config = unitConfig({ keepAliveMs: 600_000, startTimeoutMs: 60_000, defaultRunTimeoutMs: 3_600_000 });

const ended = (name: string, done: number, podName: string, reason = 'Completed', phase: Phase = 'Succeeded') =>
  testSession({
    name,
    created: at(done - 60),
    phase,
    status: {
      podName,
      startTime: at(done - 60),
      completionTime: at(done),
      conditions: [{ type: 'Finished', status: 'True', reason, message: '', lastTransitionTime: at(done) }],
    },
  });

/** The runner Pod made for `first`, as the API server shows it once its runner runs. */
function livePod(first: Session, changes: { phase?: string; runner?: 'running' | 'terminated'; meta?: object } = {}) {
  const pod = desiredPod(first, config);
  const state = changes.runner === 'terminated' ? { terminated: { exitCode: 0 } } : { running: {} };
  return {
    ...pod,
    metadata: { ...pod.metadata, ...changes.meta },
    status: {
      phase: changes.phase ?? 'Running',
      containerStatuses: [{ name: 'runner', image: '', imageID: '', ready: true, restartCount: 0, state }],
    },
  } as V1Pod;
}

const first = ended('a', 100, 'a-runner');
const next = testSession({ name: 'b', created: at(150) });
const seenWith = (pods: V1Pod[], siblings: Session[] = [first, next], session = next): Observed => {
  const claim = session.spec.workspace;
  const key = desiredPod(session, config, claim).metadata!.annotations!['tether.dev/runner-key']!;
  return { siblings, live: { pods, wanted: { phoneHash: testPhoneHash(session.spec.phone), claim, key } } };
};
const bind = { ok: true, phase: 'Starting', reason: 'RunnerBound', effects: ['BindPod'] };
const create = { ok: true, phase: 'Starting', reason: 'PodCreated', effects: ['CreatePod'] };

describe('admission with a live runner Pod', () => {
  it("binds the phone's next Session to its live Pod: no Pod made, woken at the start deadline", () => {
    expect(decide(next, seenWith([livePod(first)]), new Date(at(160)), config)).toEqual({
      step: bind,
      bindPod: 'a-runner',
      requeueAfterMs: 60_000,
    });
  });

  it('makes a Pod when the live one is not fit, and lets the idle live one go first', () => {
    const otherRepo = { ...next, spec: { ...next.spec, repo: { url: 'https://github.com/acme/api.git' } } };
    const otherWorkspace = { ...next, spec: { ...next.spec, workspace: `${next.spec.workspace}-api` } };
    const live = livePod(first);
    for (const session of [otherRepo, otherWorkspace]) {
      expect(decide(session, seenWith([live], [first, session], session), new Date(at(160)), config)).toEqual({
        step: create,
        releasePods: [live],
        requeueAfterMs: 60_000,
      });
    }
    const newImage = unitConfig({ ...config, runnerImage: 'tether-runner:next' });
    const wanted = desiredPod(next, newImage).metadata!.annotations!['tether.dev/runner-key']!;
    const seen = seenWith([live]);
    seen.live!.wanted.key = wanted;
    expect(decide(next, seen, new Date(at(160)), newImage)).toMatchObject({ step: create, releasePods: [live] });
  });

  it('never binds a Pod that is not live, or whose keep-alive is about to run out', () => {
    const notLive = [
      livePod(first, { phase: 'Pending' }),
      livePod(first, { runner: 'terminated' }),
      livePod(first, { meta: { deletionTimestamp: new Date(at(150)) } }),
    ];
    for (const pod of notLive) {
      expect(decide(next, seenWith([pod]), new Date(at(160)), config)).toEqual({
        step: create,
        requeueAfterMs: 60_000,
      });
    }
    // 600 s after the end of the last Session on it, less the 5 s margin.
    expect(decide(next, seenWith([livePod(first)]), new Date(at(100 + 594)), config).step).toEqual(bind);
    expect(decide(next, seenWith([livePod(first)]), new Date(at(100 + 595)), config)).toMatchObject({
      step: create,
      releasePods: [expect.objectContaining({ metadata: expect.objectContaining({ name: 'a-runner' }) })],
    });
    // With the keep-alive off, a finished runner's Pod is not let go early: it stays for the TTL, as before.
    expect(decide(next, seenWith([livePod(first)]), new Date(at(160)), { ...config, keepAliveMs: 0 })).toEqual({
      step: create,
      requeueAfterMs: 60_000,
    });
  });

  it("never binds another phone's Pod, nor one no finished Session of the phone was on", () => {
    const stranger = ended('z', 100, 'z-runner');
    const theirs = livePod(testSession({ ...stranger, phone: '+14155550999', name: 'z' }));
    expect(decide(next, seenWith([theirs], [first, next]), new Date(at(160)), config).step).toEqual(create);
    const orphan = livePod(testSession({ name: 'gone' }));
    expect(decide(next, seenWith([orphan]), new Date(at(160)), config)).toEqual({
      step: create,
      releasePods: [orphan],
      requeueAfterMs: 60_000,
    });
  });

  it('binds the Pod of the last Session that ended on it, counting the keep-alive from that end', () => {
    const later = ended('c', 500, 'a-runner');
    const waiting = testSession({ name: 'd', created: at(600) });
    const seen = seenWith([livePod(first)], [first, later, waiting], waiting);
    expect(decide(waiting, seen, new Date(at(1000)), config)).toMatchObject({ step: bind, bindPod: 'a-runner' });
  });
});

describe('release of a finished Session’s Pod (keep-alive)', () => {
  const retention = { podTtlMs: 60_000, keepAliveMs: 600_000, historyCount: 20, historyMaxAgeMs: 86_400_000 };
  const pod = (phase = 'Running'): V1Pod => {
    const state = phase === 'Running' ? { running: {} } : { terminated: { exitCode: 0 } };
    const runner = { name: 'runner', image: '', imageID: '', ready: true, restartCount: 0, state };
    return { metadata: { name: 'a-runner' }, status: { phase, containerStatuses: [runner] } };
  };
  const release = (s: Session, siblings: Session[], now: number, p = pod()) =>
    decideTerminal(s, p, siblings, new Date(at(now)), retention);

  const deletes = (c: ReturnType<typeof release>) => c.effects.includes('DeletePod');

  it('keeps a live runner for the keep-alive after the last end, then deletes it', () => {
    expect(release(first, [first], 200)).toEqual({
      effects: ['StartNextQueued'],
      deleteSessions: [],
      requeueAfterMs: 500_000,
    });
    expect(deletes(release(first, [first], 700))).toBe(true);
    // A runner that exited is not live: kept only for the TTL (logs).
    const exited = release(first, [first], 130, pod('Succeeded'));
    expect([deletes(exited), exited.requeueAfterMs]).toEqual([false, 30_000]);
  });

  it('leaves the Pod to the Session bound to it later, active or finished', () => {
    const running = testSession({ name: 'b', phase: 'Working', status: { podName: 'a-runner', startTime: at(150) } });
    const history = 86_400_000 - 700_000;
    expect(release(first, [first, running], 800)).toMatchObject({
      effects: ['StartNextQueued'],
      requeueAfterMs: history,
    });
    const later = ended('b', 500, 'a-runner');
    expect(deletes(release(first, [first, later], 800))).toBe(false);
    expect(release(later, [first, later], 800).requeueAfterMs).toBe(300_000);
    expect(deletes(release(later, [first, later], 1100))).toBe(true);
  });

  it(`keeps a live runner through a cancel or an approval timeout; stops it at once on a lost run or a \
deadline`, () => {
    for (const reason of ['Cancelled', 'ApprovalTimeout']) {
      expect(deletes(release(ended('a', 100, 'a-runner', reason, 'Cancelled'), [], 110))).toBe(false);
      const off = { ...retention, keepAliveMs: 0 };
      expect(
        decideTerminal(ended('a', 100, 'a-runner', reason, 'Cancelled'), pod(), [], new Date(at(110)), off).effects,
      ).toContain('DeletePod');
    }
    // A cancelled Session whose Pod never ran has no runner to wait live.
    const pending: V1Pod = { metadata: { name: 'a-runner' }, status: { phase: 'Pending' } };
    expect(deletes(release(ended('a', 100, 'a-runner', 'Cancelled', 'Cancelled'), [], 110, pending))).toBe(true);
    for (const reason of ['RunTimeout', 'StartTimeout', 'PodLost']) {
      expect(deletes(release(ended('a', 100, 'a-runner', reason, 'Failed'), [], 110))).toBe(true);
    }
  });
});

it('keeps the fixture phone the one these Pods are labelled with', () => {
  expect(livePod(first).metadata!.labels!['tether.dev/phone-hash']).toBe(testPhoneHash(PHONE));
});

describe('a whole pass against a fake cluster', () => {
  const world = (sessions: Session[], pods: V1Pod[] = []) => fakeWorld(config, () => new Date(at(160)), sessions, pods);
  const keyOf = (s: Session) => `tether/${s.metadata.name}`;

  it('binds: one status write naming the live Pod, no Pod made, the Role naming the new Session', async () => {
    const w = world([first, next], [livePod(first)]);
    await w.pass(keyOf(next));
    expect(w.calls).toEqual([`patchStatus ${keyOf(next)}`]);
    expect(w.cluster.sessions.get(keyOf(next))!.status).toMatchObject({
      phase: 'Starting',
      podName: 'a-runner',
      runnerStart: 'warm',
      startTime: at(160),
    });
    const role = [...w.roles.values()][0]!;
    expect(role.rules![0]!.resourceNames).toEqual(['b']);
  });

  it('replaces a lost Pod: the replacement made on the same workspace, then the status naming it', async () => {
    const working = testSession({ name: 'c', phase: 'Working', status: { podName: 'c-runner', startTime: at(100) } });
    const w = world([working]);
    await w.pass(keyOf(working));
    expect(w.calls).toEqual(['createPod tether/c-runner-1', `patchStatus ${keyOf(working)}`, 'event RunnerReplaced']);
    expect(w.cluster.sessions.get(keyOf(working))!.status).toMatchObject({
      phase: 'Working',
      podName: 'c-runner-1',
      runnerRestarts: 1,
      startTime: at(100),
    });
  });

  it("a deleted Session's pass spares its Pod while another Session is bound to it", async () => {
    const bound = testSession({ name: 'b', phase: 'Working', status: { podName: 'a-runner', startTime: at(150) } });
    const w = world([bound], [livePod(first)]);
    await w.pass(keyOf(first));
    expect(w.calls).toEqual([]);
    const alone = world([], [livePod(first)]);
    await alone.pass(keyOf(first));
    expect(alone.calls).toEqual(['deletePod tether/a-runner']);
  });
});
