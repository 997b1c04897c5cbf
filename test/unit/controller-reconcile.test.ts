// Whole reconcile passes against an in-memory cluster and a cache that lags it (controller-fake-cluster.ts):
// each case gives the objects before, runs the pass, and checks the objects and the status after.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { runnerName } from '../../common/session/names.ts';
import type { Phase, Session } from '../../common/session/schema.ts';
import { desiredPod } from '../../controller/builders.ts';
import { unitConfig, testSession } from './controller-fixtures.ts';
import { fakeWorld } from './controller-fake-cluster.ts';

const config = unitConfig({
  runnerNamespace: 'runners',
  startTimeoutMs: 60_000,
  defaultRunTimeoutMs: 3_600_000,
  defaultApprovalTimeoutMs: 600_000,
  podTtlMs: 3_600_000,
  keepAliveMs: 0,
});
const NOW = Date.parse('2026-11-22T09:00:00Z');
const now = () => new Date(NOW);
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString();
const key = (s: Session) => `${s.metadata.namespace}/${s.metadata.name}`;
const podKey = (s: Session) => `runners/${runnerName(s.metadata.name!)}`;

function runnerPod(session: Session, phase = 'Running'): V1Pod {
  const pod = desiredPod(session, config);
  return {
    ...pod,
    metadata: { ...pod.metadata, resourceVersion: '50', creationTimestamp: new Date(NOW) },
    status: { phase },
  };
}

const running = (phase: Phase, startedSecondsAgo: number, extra: Partial<Session['status']> = {}) =>
  testSession({ name: 'a', phase, status: { startTime: ago(startedSecondsAgo), podName: runnerName('a'), ...extra } });

interface Case {
  name: string;
  sessions: Session[];
  /** The runner Pods in the cluster and the cache, by the Session they belong to and their phase. */
  pods?: Array<[Session, string]>;
  phase?: Phase;
  /** The reason of the Finished condition (an end), or of the Admitted condition. */
  reason?: string;
  message?: RegExp;
  pod: 'made' | 'kept' | 'removed' | 'none';
  requeueAfterMs?: number;
}

const waitingBehind = testSession({ name: 'b', created: '2026-11-22T08:30:00Z' });
const cancelledRun = testSession({
  name: 'a',
  phase: 'Working',
  cancel: true,
  status: { startTime: ago(60), podName: runnerName('a') },
});

const cases: Case[] = [
  {
    name: "admission: the phone's only command starts, its Pod made, woken at the start deadline",
    sessions: [testSession({ name: 'a' })],
    phase: 'Starting',
    reason: 'PodCreated',
    pod: 'made',
    requeueAfterMs: 60_000,
  },
  {
    name: 'admission: a command behind an active one of the same phone waits',
    sessions: [waitingBehind, running('Working', 60)],
    pods: [[running('Working', 60), 'Running']],
    phase: 'Queued',
    reason: 'Queued',
    pod: 'none',
  },
  {
    name: 'a second lost Pod: an active Session whose replaced runner Pod is gone fails',
    sessions: [running('Working', 60, { runnerRestarts: 1 })],
    phase: 'Failed',
    reason: 'PodLost',
    message: /disappeared/,
    pod: 'none',
  },
  {
    name: 'start deadline: a Pod still Pending after the start timeout fails the Session and is removed',
    sessions: [running('Starting', 61)],
    pods: [[running('Starting', 61), 'Pending']],
    phase: 'Failed',
    reason: 'StartTimeout',
    pod: 'removed',
  },
  {
    name: 'run deadline: a run longer than its run timeout is stopped',
    sessions: [running('Working', 3601)],
    pods: [[running('Working', 3601), 'Running']],
    phase: 'Failed',
    reason: 'RunTimeout',
    pod: 'removed',
  },
  {
    name: 'approval deadline: a request unanswered past the approval timeout ends the Session',
    sessions: [running('AwaitingApproval', 700, { pending: { id: 'r1', kind: 'changes', createdAt: ago(601) } })],
    pods: [[running('AwaitingApproval', 700), 'Running']],
    phase: 'TimedOut',
    reason: 'ApprovalTimeout',
    pod: 'removed',
  },
  {
    name: 'before its deadlines a running Session is left alone and woken at the nearest',
    sessions: [running('Working', 100)],
    pods: [[running('Working', 100), 'Running']],
    phase: 'Working',
    pod: 'kept',
    requeueAfterMs: 3_500_000,
  },
  {
    name: 'cancellation: a running Session is Cancelled and its runner stopped',
    sessions: [cancelledRun],
    pods: [[cancelledRun, 'Running']],
    phase: 'Cancelled',
    reason: 'Cancelled',
    message: /cancelled by the user/,
    pod: 'removed',
  },
  {
    name: 'cancellation: a command cancelled before its turn never gets a Pod',
    sessions: [testSession({ name: 'a', cancel: true })],
    phase: 'Cancelled',
    reason: 'Cancelled',
    pod: 'none',
  },
];

function finishedOrAdmitted(session: Session | undefined): string | undefined {
  const conditions = session?.status?.conditions ?? [];
  return (conditions.find((c) => c.type === 'Finished') ?? conditions.find((c) => c.type === 'Admitted'))?.reason;
}

describe('a reconcile pass, against a fake cluster and cache', () => {
  it.each(cases)('$name', async (c) => {
    const world = fakeWorld(
      config,
      now,
      c.sessions,
      (c.pods ?? []).map(([s, phase]) => runnerPod(s, phase)),
    );
    const subject = c.sessions[0]!;
    const result = await world.pass(key(subject));
    const after = world.cluster.sessions.get(key(subject));
    expect(after?.status?.phase).toBe(c.phase);
    if (c.reason) expect(finishedOrAdmitted(after)).toBe(c.reason);
    if (c.message) expect(after?.status?.result?.message).toMatch(c.message);
    const pod = world.cluster.pods.get(podKey(subject));
    expect(pod !== undefined).toBe(c.pod === 'made' || c.pod === 'kept');
    expect(world.calls.includes(`createPod ${podKey(subject)}`)).toBe(c.pod === 'made');
    expect(world.calls.includes(`deletePod ${podKey(subject)}`)).toBe(c.pod === 'removed');
    if (c.pod === 'made') expect(after?.status?.podName).toBe(pod?.metadata?.name);
    expect(result.requeueAfterMs).toBe(c.requeueAfterMs);
    expect(world.calls.filter((call) => call.startsWith('conflict'))).toEqual([]);
  });
});

describe("a pass after the controller's own writes", () => {
  it('does not act on a cache that has not yet observed its own admission, and wakes once it has', async () => {
    const session = testSession({ name: 'a' });
    const world = fakeWorld(config, now, [session]);
    await world.pass(key(session));
    const made = [...world.calls];
    expect(world.cluster.sessions.get(key(session))?.status?.phase).toBe('Starting');
    // A pass woken before the cache shows the write (e.g. by the workspace's event) does nothing.
    const early = await world.pass(key(session));
    expect(early.waited).toBe(true);
    expect(world.calls).toEqual(made);
    // The echo of the pass's own writes asks for no pass of its own; the pass that waited runs again.
    expect(world.sync()).toEqual([]);
    expect(new Set(world.queued)).toEqual(new Set([key(session)]));
    await world.settle();
    expect(world.calls).toEqual(made);
  });

  it('removes the Pod an admission made when its status write found the Session ended meanwhile', async () => {
    const session = testSession({ name: 'a' });
    const world = fakeWorld(config, now, [session]);
    const ensurePod = world.ops.ensurePod;
    world.ops.ensurePod = async (pod) => {
      const current = world.cluster.sessions.get(key(session))!;
      const ended = { phase: 'Failed' as const, completionTime: ago(0), result: { message: 'ended elsewhere' } };
      const bumped = String(Number(current.metadata.resourceVersion) + 1000);
      world.cluster.sessions.set(key(session), {
        ...current,
        metadata: { ...current.metadata, resourceVersion: bumped },
        status: ended,
      });
      return ensurePod(pod);
    };
    await world.pass(key(session));
    expect(world.calls).toContain(`conflict ${key(session)}`);
    expect(world.cluster.pods.has(podKey(session))).toBe(true);
    // The informers show the end and the Pod: the Pod's event asks for a pass, which removes it.
    world.queued.push(...world.sync());
    await world.settle();
    expect(world.cluster.pods.has(podKey(session))).toBe(false);
    const after = world.cluster.sessions.get(key(session));
    expect(after?.status?.phase).toBe('Failed');
    expect(after?.status?.podName).toBeUndefined();
  });

  it("carries a cancellation to the phone's queue: the waiting command is cancelled with it", async () => {
    const waiting = testSession({ name: 'b', phase: 'Queued', created: '2026-11-22T08:30:00Z' });
    const world = fakeWorld(config, now, [cancelledRun, waiting], [runnerPod(cancelledRun)]);
    await world.pass(key(cancelledRun));
    world.queued.push(...world.sync());
    await world.settle();
    world.queued.push(...world.sync());
    await world.settle();
    const after = world.cluster.sessions.get(key(waiting));
    expect(after?.status?.phase).toBe('Cancelled');
    expect(finishedOrAdmitted(after)).toBe('QueueCleared');
  });
});
