import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admit, clearedBy } from '../../controller/admission.ts';
import { decide, decideActive, specProblem } from '../../controller/decide.ts';
import type { Phase } from '../../common/session/schema.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const at = (s: number) => new Date(Date.parse('2026-11-22T08:00:00Z') + s * 1000).toISOString();
const queued = (name: string, created: number, since = created) =>
  testSession({
    name,
    created: at(created),
    phase: 'Queued',
    status: {
      conditions: [{ type: 'Admitted', status: 'False', reason: 'Queued', message: '', lastTransitionTime: at(since) }],
    },
  });
const session = (name: string, created: number, phase?: Phase, extra: object = {}) =>
  testSession({ name, created: at(created), phase, ...extra });

describe('admit', () => {
  it.each([
    ['the only Session runs', [], 'a', { kind: 'run' }],
    ['waits behind an active one', [session('x', 0, 'Working')], 'a', { kind: 'wait', position: 1 }],
    ['the oldest waiting runs when none is active', [queued('b', 70)], 'a', { kind: 'run' }],
    [
      'a younger one waits for the oldest',
      [session('x', 0, 'Succeeded'), queued('b', 5)],
      'c',
      { kind: 'wait', position: 1 },
    ],
    ['same second: name decides', [session('a0', 10)], 'a1', { kind: 'wait', position: 1 }],
    [
      'the 6th waiting is refused',
      [session('x', 0, 'Working'), ...[1, 2, 3, 4, 5].map((i) => queued(`q${i}`, i))],
      'z',
      { kind: 'full', queued: 5 },
    ],
    [
      'the 5th waiting is accepted',
      [session('x', 0, 'Working'), ...[1, 2, 3, 4].map((i) => queued(`q${i}`, i))],
      'z',
      { kind: 'wait', position: 5 },
    ],
    ['finished ones do not count', [session('x', 0, 'Failed'), session('y', 1, 'Succeeded')], 'z', { kind: 'run' }],
  ])('%s', (_label, siblings, name, expected) => {
    expect(admit(session(name, 60), siblings, 5)).toEqual(expected);
  });

  it('sweeps away Sessions that waited while the active one was cancelled, rejected or timed out', () => {
    const cancelled = session('x', 0, 'Cancelled', { cancel: true, status: { completionTime: at(30) } });
    expect(admit(queued('b', 10, 10), [cancelled], 5)).toEqual({ kind: 'cleared', by: 'x' });
    expect(admit(queued('b', 10, 31), [cancelled], 5)).toEqual({ kind: 'run' });
    expect(admit(session('c', 29), [cancelled], 5)).toEqual({ kind: 'cleared', by: 'x' });
    expect(admit(session('c', 30), [cancelled], 5)).toEqual({ kind: 'run' });
    const finished = (reason: string) => [
      { type: 'Finished', status: 'True' as const, reason, message: '', lastTransitionTime: at(31) },
    ];
    const swept = session('y', 1, 'Cancelled', {
      status: { completionTime: at(31), conditions: finished('QueueCleared') },
    });
    expect(
      clearedBy(queued('b', 20, 30.5), [cancelled, swept]),
      'a Session cancelled by the sweep (QueueCleared) does not sweep again',
    ).toBeUndefined();
    const cancelledByController = session('z', 1, 'Cancelled', {
      cancel: true,
      status: { completionTime: at(31), conditions: finished('Cancelled') },
    });
    expect(clearedBy(queued('b', 20, 30.5), [cancelledByController])).toBe('z');
    for (const phase of ['Rejected', 'TimedOut'] as const) {
      expect(admit(queued('b', 10), [session('x', 0, phase, { status: { completionTime: at(30) } })], 5).kind).toBe(
        'cleared',
      );
    }
    for (const phase of ['Succeeded', 'Failed'] as const) {
      expect(admit(queued('b', 10), [session('x', 0, phase, { status: { completionTime: at(30) } })], 5).kind).toBe(
        'run',
      );
    }
  });
});

const pod = (phase: string, extra: Partial<V1Pod['status']> = {}, meta: object = {}): V1Pod => ({
  metadata: { name: 'p', ...meta },
  status: { phase, ...extra },
});
const config = unitConfig({ defaultRunTimeoutMs: 3_600_000, defaultApprovalTimeoutMs: 1_800_000 });

describe('decideActive', () => {
  const working = testSession({ phase: 'Working', status: { startTime: at(0) } });
  it('waits for the run deadline while the Pod runs', () => {
    expect(decideActive(working, pod('Running'), new Date(at(60)), config)).toEqual({ requeueAfterMs: 3_540_000 });
  });
  it('fails a run past its deadline and stops the Pod', () => {
    expect(decideActive(working, pod('Running'), new Date(at(3600)), config)).toMatchObject({
      step: { phase: 'Failed', reason: 'RunTimeout', effects: expect.arrayContaining(['DeletePod']) },
    });
  });
  it("times out an approval from pending.createdAt with the Session's own timeout", () => {
    const waiting = testSession({
      phase: 'AwaitingApproval',
      timeouts: { approval: '10m' },
      status: { startTime: at(0), pending: { id: 'p', kind: 'changes', createdAt: at(100) } },
    });
    expect(decideActive(waiting, pod('Running'), new Date(at(400)), config)).toEqual({ requeueAfterMs: 300_000 });
    expect(decideActive(waiting, pod('Running'), new Date(at(700)), config)).toMatchObject({
      step: {
        phase: 'TimedOut',
        reason: 'ApprovalTimeout',
        effects: expect.arrayContaining(['DeletePod', 'ClearPhoneQueue']),
      },
    });
  });
  it('replaces a lost, crashed, evicted, deleted or silently finished runner once, keeping the phase', () => {
    const lost = [
      undefined,
      pod('Failed', { reason: 'Evicted', message: 'low on memory' }),
      pod('Succeeded'),
      pod('Running', {}, { deletionTimestamp: new Date() }),
    ];
    for (const phase of ['Starting', 'Working', 'AwaitingApproval', 'Publishing'] as const) {
      const running = testSession({ phase, status: { startTime: at(0), podName: 'p' } });
      for (const gone of lost) {
        expect(decideActive(running, gone, new Date(at(1)), config)).toEqual({
          step: { ok: true, phase, reason: 'RunnerReplaced', effects: ['ReplacePod'] },
          message: expect.stringMatching(/; a new runner pod continues the run$/),
        });
      }
    }
    expect(decideActive(working, undefined, new Date(at(1)), config).message).toBe(
      'runner pod s-0003-runner disappeared; a new runner pod continues the run'.replace(
        's-0003',
        working.metadata.name!,
      ),
    );
  });

  it('after one replacement, reports a lost, crashed, evicted or silently finished runner as PodLost', () => {
    const working = testSession({ phase: 'Working', status: { startTime: at(0), runnerRestarts: 1 } });
    expect(decideActive(working, undefined, new Date(at(1)), config)).toMatchObject({
      step: { reason: 'PodLost' },
      message: expect.stringMatching(/disappeared/),
    });
    const crashed = pod('Failed', {
      containerStatuses: [
        {
          name: 'runner',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 2, reason: 'Error' } },
        },
      ],
    });
    expect(decideActive(working, crashed, new Date(at(1)), config)).toMatchObject({
      step: { reason: 'PodLost' },
      exitCode: 2,
      message: 'the runner exited with code 2 (Error)',
    });
    expect(
      decideActive(working, pod('Failed', { reason: 'Evicted', message: 'low on memory' }), new Date(at(1)), config),
    ).toMatchObject({ message: 'runner pod p failed: Evicted — low on memory' });
    expect(decideActive(working, pod('Succeeded'), new Date(at(1)), config)).toMatchObject({
      exitCode: 0,
      message: /without reporting/,
    });
    expect(
      decideActive(working, pod('Running', {}, { deletionTimestamp: new Date() }), new Date(at(1)), config),
    ).toMatchObject({ step: { reason: 'PodLost' }, message: expect.stringMatching(/was deleted/) });
  });
});

describe('decideActive: the start deadline', () => {
  const starting = testSession({ phase: 'Starting', status: { startTime: at(0) } });
  const waitingOn = (reason: string, message = '') =>
    pod('Pending', {
      containerStatuses: [
        {
          name: 'runner',
          image: 'tether-runner:missing',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason, message } },
        },
      ],
    });
  const limit = config.startTimeoutMs;
  it('is at most 2 minutes by default, so the phone hears within 3', () => {
    expect(limit).toBeLessThanOrEqual(120_000);
  });
  it("waits for the start deadline, reporting what holds the Pod back in Kubernetes' words", () => {
    expect(decideActive(starting, waitingOn('ErrImagePull', 'not found'), new Date(at(10)), config)).toEqual({
      startProblem: expect.objectContaining({ reason: 'ErrImagePull', detail: 'not found' }),
      requeueAfterMs: limit - 10_000,
    });
    expect(decideActive(starting, pod('Running'), new Date(at(10)), config)).toEqual({
      requeueAfterMs: limit - 10_000,
    });
  });
  it.each([
    [
      'ImagePullBackOff',
      waitingOn('ImagePullBackOff'),
      /runner image "tether-runner:missing" could not be pulled \(ImagePullBackOff\)\. Ask your operator/,
    ],
    [
      'Unschedulable',
      pod('Pending', {
        conditions: [
          { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available' },
        ],
      }),
      /no node of the cluster can take the runner \(Unschedulable\)/,
    ],
    [
      'ContainerCreating',
      waitingOn('ContainerCreating'),
      /still being prepared .*\(ContainerCreating: its image downloading or its workspace volume attaching\)/,
    ],
  ])('fails a Pod still held back by %s at the deadline, saying why and what to do', (reason, held, message) => {
    const decision = decideActive(starting, held, new Date(at(limit / 1000)), config);
    expect(decision).toMatchObject({
      step: {
        phase: 'Failed',
        reason: 'StartTimeout',
        effects: expect.arrayContaining(['DeletePod', 'StartNextQueued']),
      },
      startProblem: { reason },
    });
    expect(decision.message).toMatch(message);
    expect(decision.message).toMatch(/send the command again/i);
  });
  it.each(['ContainerCreating', 'PodInitializing'])(
    'does not blame storage for a Pod only waiting in %s (a slow image pull looks the same)',
    (reason) => {
      const decision = decideActive(starting, waitingOn(reason), new Date(at(limit / 1000)), config);
      expect(decision.message).not.toMatch(/storage|could not be attached/);
    },
  );
  it('fails a Pod that shows no reason but never started, and leaves a working runner alone', () => {
    expect(decideActive(starting, pod('Pending'), new Date(at(limit / 1000 + 1)), config)).toMatchObject({
      step: { reason: 'StartTimeout' },
      message: /did not start within 120s \(its Pod is still Pending\)/,
    });
    const working = testSession({ phase: 'Working', status: { startTime: at(0) } });
    expect(decideActive(working, pod('Running'), new Date(at(limit / 1000 + 1)), config).step).toBeUndefined();
  });
});

describe('decide', () => {
  const now = new Date(at(100));
  const decideFor = (s: ReturnType<typeof testSession>, siblings: ReturnType<typeof testSession>[] = []) =>
    decide(s, { siblings }, now, config);
  it('returns the transition with the effects the state machine gives it', () => {
    expect(decideFor(session('a', 60)).step).toEqual({
      ok: true,
      phase: 'Starting',
      reason: 'PodCreated',
      effects: ['CreatePod'],
    });
    expect(decideFor(session('a', 60), [session('x', 0, 'Working')]).step).toMatchObject({
      phase: 'Queued',
      effects: [],
    });
    expect(decideFor(queued('a', 60), [session('x', 0, 'Working')])).toEqual({});
    expect(decideFor(session('a', 60, undefined, { cancel: true })).step).toMatchObject({
      phase: 'Cancelled',
      reason: 'Cancelled',
      effects: ['SetCompletionTime', 'DeletePod', 'ClearPhoneQueue'],
    });
    const clearer = session('x', 0, 'Rejected', { status: { completionTime: at(80) } });
    expect(decideFor(queued('a', 60), [clearer])).toMatchObject({
      step: { phase: 'Cancelled', reason: 'QueueCleared', effects: ['SetCompletionTime', 'DeletePod'] },
      message: expect.stringContaining('x'),
    });
    const full = [session('x', 0, 'Working'), ...[1, 2, 3, 4, 5].map((i) => queued(`q${i}`, i))];
    expect(decideFor(session('z', 60), full).step).toMatchObject({
      phase: 'Failed',
      reason: 'QueueFull',
      effects: ['SetCompletionTime'],
    });
  });
  it('fails a bad spec or a workspace of another phone with InvalidSpec, which lets the next one start', () => {
    const bad = testSession({ timeouts: { run: '0s' } });
    expect(decideFor(bad).step).toMatchObject({
      phase: 'Failed',
      reason: 'InvalidSpec',
      effects: ['SetCompletionTime', 'StartNextQueued'],
    });
    const pvc = { metadata: { labels: { 'tether.dev/phone-hash': '0000000000000000' } } };
    expect(decide(testSession(), { siblings: [], pvc }, now, config)).toMatchObject({
      step: { reason: 'InvalidSpec' },
      message: expect.stringMatching(/belongs to another phone/),
    });
  });
  it(`does not start a waiting command once the phone spent its daily budget today, and lets the next one have its \
turn`, () => {
    const budgeted = unitConfig({ budget: { dailyUsd: 10, timeZone: 'UTC' } });
    const spent = (usd: number) =>
      session('x', 0, 'Succeeded', { status: { completionTime: at(50), result: { costUsd: usd } } });
    expect(decide(queued('a', 60), { siblings: [spent(9.99)] }, now, budgeted).step).toMatchObject({
      phase: 'Starting',
    });
    expect(decide(queued('a', 60), { siblings: [spent(10)] }, now, budgeted)).toEqual({
      step: { ok: true, phase: 'Failed', reason: 'OverBudget', effects: ['SetCompletionTime', 'StartNextQueued'] },
      message: "today's budget is spent: $10.00 of $10.00; new commands start again after midnight (UTC)",
    });
    const yesterday = session('y', 0, 'Succeeded', {
      status: { completionTime: '2026-11-21T23:00:00Z', result: { costUsd: 50 } },
    });
    expect(decide(queued('a', 60), { siblings: [yesterday] }, now, budgeted).step).toMatchObject({ phase: 'Starting' });
    expect(
      decide(queued('a', 60), { siblings: [spent(99)] }, now, unitConfig({ budget: { dailyUsd: 0, timeZone: 'UTC' } }))
        .step,
    ).toMatchObject({ phase: 'Starting' });
  });
  it('cancels an active Session, stopping its Pod', () => {
    const working = testSession({ phase: 'Working', cancel: true, status: { startTime: at(0) } });
    expect(decide(working, { siblings: [], pod: pod('Running') }, now, config).step).toMatchObject({
      phase: 'Cancelled',
      effects: expect.arrayContaining(['DeletePod']),
    });
  });
});

describe('specProblem', () => {
  const hosts = config.repoHosts;
  it('accepts a well-formed Session and names the field of a bad one', () => {
    expect(specProblem(testSession(), hosts, testPhoneHash)).toBeUndefined();
    const bad = testSession();
    bad.spec.workspace = 'ws-elsewhere';
    expect(specProblem(bad, hosts, testPhoneHash)).toMatch(/^spec\.workspace "ws-elsewhere"/);
    const longName = testSession({ name: 'x'.repeat(64) });
    expect(specProblem(longName, hosts, testPhoneHash)).toMatch(/longer than 63/);
  });

  it('refuses a repository outside the host list and a branch the schema would refuse, before any Pod', () => {
    const foreign = testSession();
    foreign.spec.repo.url = 'https://evil.example/acme/web.git';
    expect(specProblem(foreign, ['github.com'], testPhoneHash)).toMatch(
      /the host evil\.example, which is not on this install's list of repository hosts/,
    );
    expect(decide(foreign, { siblings: [] }, new Date(), { ...config, repoHosts: ['github.com'] })).toMatchObject({
      step: { phase: 'Failed', effects: expect.not.arrayContaining(['CreatePod']) },
      message: expect.stringMatching(/not on this install's list/),
    });
    const local = testSession();
    local.spec.repo.url = '/srv/git/acme/web.git';
    expect(specProblem(local, ['github.com', '/srv/git'], testPhoneHash)).toBeUndefined();
    const option = testSession();
    option.spec.repo.baseBranch = '--upload-pack=touch /tmp/x';
    expect(specProblem(option, hosts, testPhoneHash)).toMatch(/spec\.repo\.baseBranch .* is not a branch name/);
  });
});
