import { describe, expect, it } from 'vitest';
import { take } from '../../controller/decide.ts';
import { REPORTING_CONTROLLER, statusEvents } from '../../controller/events.ts';
import { computeStatus } from '../../controller/status.ts';
import { testSession } from './controller-fixtures.ts';

const now = new Date('2026-11-22T08:03:12.000Z');

describe('statusEvents', () => {
  it('records one Event per condition the controller writes, none when nothing changed', () => {
    const session = testSession({ name: 'a', uid: '0123456789abcdef' });
    const queued = computeStatus({
      session,
      now,
      step: take(session, { type: 'Enqueue' }),
      message: 'waiting (#1)',
    }).status;
    const [event, ...more] = statusEvents(session, {}, queued, 'ctl-0', now);
    expect(more).toEqual([]);
    expect(event).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      metadata: { name: 'a.01234567.queued', namespace: 'tether' },
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: 'ctl-0',
      action: 'Queued',
      reason: 'Queued',
      note: 'waiting (#1)',
      type: 'Normal',
      regarding: {
        apiVersion: 'tether.dev/v1alpha1',
        kind: 'Session',
        name: 'a',
        namespace: 'tether',
        uid: '0123456789abcdef',
      },
    });
    const again = computeStatus({
      session: { ...session, status: queued },
      now: new Date(now.getTime() + 5000),
    }).status;
    expect(statusEvents({ ...session, status: queued }, queued, again, 'ctl-0', now)).toEqual([]);
    const bumped = { ...session, metadata: { ...session.metadata, generation: 2 }, status: queued };
    expect(
      statusEvents(bumped, queued, computeStatus({ session: bumped, now }).status, 'ctl-0', now),
      'a new observedGeneration is no new Event',
    ).toEqual([]);
    const started = computeStatus({
      session: bumped,
      now,
      step: take(bumped, { type: 'PodCreated' }),
      pod: { name: 'a-runner' },
    }).status;
    expect(
      statusEvents(bumped, queued, started, 'ctl-0', now),
      'admission is no Event (its condition and the Pod say it)',
    ).toEqual([]);
  });

  it('records a lost runner Pod replaced as a Warning RunnerReplaced, once', () => {
    const working = testSession({
      name: 'r',
      uid: 'fedcba9876543210',
      phase: 'Working',
      status: { startTime: '2026-11-22T08:00:00Z', podName: 'r-runner' },
    });
    const replaced = computeStatus({
      session: working,
      now,
      step: take(working, { type: 'RunnerLost' }),
      replacement: 'r-runner-1',
    }).status;
    expect(statusEvents(working, working.status!, replaced, 'ctl-0', now)).toEqual([
      {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: 'r.fedcba98.runnerreplaced', namespace: 'tether' },
        eventTime: '2026-11-22T08:03:12.000000Z',
        reportingController: REPORTING_CONTROLLER,
        reportingInstance: 'ctl-0',
        action: 'Working',
        reason: 'RunnerReplaced',
        note: 'runner pod r-runner was lost; r-runner-1 continues the run',
        type: 'Warning',
        regarding: {
          apiVersion: 'tether.dev/v1alpha1',
          kind: 'Session',
          name: 'r',
          namespace: 'tether',
          uid: 'fedcba9876543210',
        },
      },
    ]);
    expect(statusEvents(working, replaced, replaced, 'ctl-0', now)).toEqual([]);
  });

  it('makes failures Warnings and records an end the runner wrote', () => {
    const working = testSession({ name: 'b', phase: 'Working', status: { startTime: '2026-11-22T08:00:00Z' } });
    const lost = computeStatus({
      session: working,
      now,
      step: take(working, { type: 'PodLost' }),
      message: 'the runner exited with code 137',
    }).status;
    expect(statusEvents(working, working.status!, lost, 'ctl-0', now)).toEqual([
      expect.objectContaining({
        action: 'Failed',
        reason: 'PodLost',
        type: 'Warning',
        note: 'the runner exited with code 137',
      }),
    ]);
    const rejected = testSession({ name: 'c', phase: 'Rejected', status: { completionTime: '2026-11-22T08:01:00Z' } });
    const recorded = computeStatus({ session: rejected, now }).status;
    expect(statusEvents(rejected, rejected.status!, recorded, 'ctl-0', now)).toEqual([
      expect.objectContaining({ reason: 'Rejected', type: 'Normal' }),
    ]);
  });

  it("records a Pod held back as a Warning with Kubernetes' reason, then Started when the runner works", () => {
    const starting = testSession({ name: 'd', phase: 'Starting', status: { startTime: '2026-11-22T08:00:00Z' } });
    const problem = {
      reason: 'ImagePullBackOff',
      detail: 'Back-off pulling image "x:1"',
      plain: 'the runner image could not be pulled',
    };
    const held = computeStatus({ session: starting, now, startProblem: problem }).status;
    expect(held.conditions).toContainEqual(
      expect.objectContaining({
        type: 'Started',
        status: 'False',
        reason: 'ImagePullBackOff',
        message: 'Back-off pulling image "x:1"',
      }),
    );
    expect(statusEvents(starting, starting.status!, held, 'ctl-0', now)).toEqual([
      expect.objectContaining({ reason: 'ImagePullBackOff', type: 'Warning' }),
    ]);
    const working = { ...starting, status: { ...held, phase: 'Working' as const } };
    const started = computeStatus({ session: working, now }).status;
    expect(started.conditions).toContainEqual(
      expect.objectContaining({ type: 'Started', status: 'True', reason: 'RunnerStarted' }),
    );
    const timedOut = computeStatus({
      session: starting,
      now,
      step: take(starting, { type: 'StartTimeout' }),
      message: problem.plain,
      startProblem: problem,
    }).status;
    expect(statusEvents(starting, starting.status!, timedOut, 'ctl-0', now).map((e) => [e.reason, e.type])).toEqual([
      ['ImagePullBackOff', 'Warning'],
      ['StartTimeout', 'Warning'],
    ]);
  });
});
