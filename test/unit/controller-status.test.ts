import { describe, expect, it } from 'vitest';
import { take } from '../../controller/decide.ts';
import { computeStatus, finalStatusWritten } from '../../controller/status.ts';
import { testSession } from './controller-fixtures.ts';

const now = new Date('2026-11-22T08:03:12.000Z');

describe('computeStatus', () => {
  it('moves a new Session to Starting with pod, start time, admitted condition, display and observedGeneration', () => {
    const session = testSession({ name: 'a' });
    const { patch, reason } = computeStatus({
      session,
      now,
      step: take(session, { type: 'PodCreated' }),
      pod: { name: 'a-runner', createdAt: '2026-11-22T08:00:01Z' },
    });
    expect(reason).toBe('PodCreated');
    expect(patch).toEqual({
      phase: 'Starting',
      podName: 'a-runner',
      startTime: '2026-11-22T08:00:01.000Z',
      runnerStart: 'cold',
      conditions: [
        {
          type: 'Admitted',
          status: 'True',
          reason: 'PodCreated',
          message: 'runner pod a-runner created',
          lastTransitionTime: now.toISOString(),
          observedGeneration: 1,
        },
      ],
      display: { phone: '+1415•••0123', prompt: 'make the navbar sticky' },
      observedGeneration: 1,
    });
  });

  it('binds a new Session to the live Pod: Starting, podName, start time now, warm, admitted by RunnerBound', () => {
    const session = testSession({ name: 'b', phase: 'Queued' });
    const { patch, reason } = computeStatus({
      session,
      now,
      step: take(session, { type: 'RunnerBound' }),
      pod: { name: 'a-runner', start: 'warm' },
    });
    expect(reason).toBe('RunnerBound');
    expect(patch).toEqual({
      phase: 'Starting',
      podName: 'a-runner',
      startTime: now.toISOString(),
      runnerStart: 'warm',
      conditions: [
        {
          type: 'Admitted',
          status: 'True',
          reason: 'RunnerBound',
          message: 'live runner pod a-runner bound',
          lastTransitionTime: now.toISOString(),
          observedGeneration: 1,
        },
      ],
      display: { phone: '+1415•••0123', prompt: 'make the navbar sticky' },
      observedGeneration: 1,
    });
  });

  it('names the replacement of a lost Pod and counts it, keeping the phase, startTime and pending request', () => {
    const pending = { id: 'r1', kind: 'changes' as const, createdAt: '2026-11-22T08:10:00.000Z' };
    const session = testSession({
      name: 'a',
      phase: 'AwaitingApproval',
      status: { podName: 'a-runner', startTime: '2026-11-22T08:00:01.000Z', runnerStart: 'warm', pending },
    });
    const { patch, reason, status } = computeStatus({
      session,
      now,
      step: take(session, { type: 'RunnerLost' }),
      replacement: 'a-runner-1',
    });
    expect(reason).toBe('RunnerReplaced');
    expect(patch).toEqual({
      podName: 'a-runner-1',
      runnerRestarts: 1,
      display: { phone: '+1415•••0123', prompt: 'make the navbar sticky' },
      observedGeneration: 1,
    });
    expect(status).toMatchObject({ phase: 'AwaitingApproval', startTime: '2026-11-22T08:00:01.000Z', pending });
  });

  it('writes no token: an error text or prompt holding one reaches the status redacted, and only once', () => {
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6eDp5In0.c2lnbmF0dXJl';
    const session = testSession({ phase: 'AwaitingApproval' });
    session.spec.prompt = 'use ghp_0123456789abcdefghijABCDEFGH please';
    const message = `pods "a-runner" is forbidden: token ${jwt} rejected`;
    const first = computeStatus({ session, now, step: take(session, { type: 'ApprovalTimeout' }), message });
    const written = JSON.stringify(first.patch);
    expect(written).not.toContain('eyJhbGci');
    expect(written).not.toContain('ghp_0123');
    expect(first.patch?.result?.message).toBe('pods "a-runner" is forbidden: token [redacted] rejected');
    expect(first.patch?.display?.prompt).toMatch(/^use \[redacted\] /);
    expect(computeStatus({ session: { ...session, status: first.status }, now }).patch).toBeUndefined();
  });

  it('writes nothing when nothing changed', () => {
    const session = testSession({ name: 'a' });
    const first = computeStatus({ session, now, step: take(session, { type: 'Enqueue' }) });
    const again = computeStatus({ session: { ...session, status: first.status }, now: new Date(now.getTime() + 5000) });
    expect(again.patch).toBeUndefined();
  });

  it('keeps lastTransitionTime while a condition keeps its status', () => {
    const session = testSession({ name: 'a' });
    const queued = computeStatus({ session, now, step: take(session, { type: 'Enqueue' }) }).status;
    const later = new Date(now.getTime() + 60_000);
    const started = computeStatus({
      session: { ...session, status: queued },
      now: later,
      step: take(session, { type: 'PodCreated' }),
      pod: { name: 'a-runner' },
    }).status;
    const admitted = started.conditions!.find((c) => c.type === 'Admitted')!;
    expect(admitted).toMatchObject({ status: 'True', lastTransitionTime: later.toISOString() });
    expect(started.startTime).toBe(later.toISOString());
  });

  it(`ends a Session the controller stops: terminal phase, completion time, Finished condition, result message, \
duration`, () => {
    const session = testSession({ phase: 'AwaitingApproval', status: { startTime: '2026-11-22T08:00:00Z' } });
    const { patch } = computeStatus({
      session,
      now,
      step: take(session, { type: 'ApprovalTimeout' }),
      message: 'no decision in time',
    });
    expect(patch).toMatchObject({
      phase: 'TimedOut',
      completionTime: now.toISOString(),
      conditions: [
        expect.objectContaining({
          type: 'Finished',
          status: 'True',
          reason: 'ApprovalTimeout',
          message: 'no decision in time',
        }),
      ],
      display: { duration: '3m12s' },
      result: { message: 'no decision in time' },
    });
  });

  it('completes the bookkeeping of a terminal phase the runner wrote, keeping its fields', () => {
    const session = testSession({
      phase: 'Succeeded',
      status: {
        startTime: '2026-11-22T08:00:00Z',
        completionTime: '2026-11-22T08:01:00Z',
        result: { prUrl: 'https://x/pull/1', costUsd: 0.4 },
      },
    });
    const { patch } = computeStatus({ session, now });
    expect(patch).toEqual({
      conditions: [
        expect.objectContaining({
          type: 'Finished',
          reason: 'Published',
          message: 'pull request opened: https://x/pull/1',
        }),
      ],
      display: { phone: '+1415•••0123', prompt: 'make the navbar sticky', duration: '1m0s' },
      observedGeneration: 1,
    });
  });

  it('records the exit code of a lost runner', () => {
    const session = testSession({ phase: 'Working', status: { startTime: '2026-11-22T08:00:00Z' } });
    const { patch } = computeStatus({
      session,
      now,
      step: take(session, { type: 'PodLost' }),
      message: 'the runner exited with code 137',
      exitCode: 137,
    });
    expect(patch?.result).toEqual({ message: 'the runner exited with code 137', exitCode: 137 });
    expect(patch?.phase).toBe('Failed');
  });

  it('refuses an illegal transition instead of writing it', () => {
    expect(() => take(testSession({ phase: 'Working' }), { type: 'PodCreated' })).toThrow(
      /not allowed in phase Working/,
    );
  });
});

describe('computeStatus on a Session the controller already finished', () => {
  it('keeps the Finished reason it wrote (PodLost is not rewritten as AgentFailed)', () => {
    const session = testSession({ phase: 'Working', status: { startTime: '2026-11-22T08:00:00Z' } });
    const ended = computeStatus({
      session,
      now,
      step: take(session, { type: 'PodLost' }),
      message: 'the runner exited with code 137',
      exitCode: 137,
    }).status;
    const later = computeStatus({ session: { ...session, status: ended }, now: new Date(now.getTime() + 1000) });
    expect(later.patch).toBeUndefined();
    expect(later.status.conditions?.find((c) => c.type === 'Finished')?.reason).toBe('PodLost');
  });
});

describe('computeStatus with objects as the API server returns them', () => {
  it('sees no change when only the key order differs', () => {
    const session = testSession({ name: 'a' });
    const written = computeStatus({
      session,
      now,
      step: take(session, { type: 'PodCreated' }),
      pod: { name: 'a-runner' },
    }).status;
    const sortKeys = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sortKeys)
        : v && typeof v === 'object'
          ? Object.fromEntries(
              Object.keys(v)
                .sort()
                .reverse()
                .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
            )
          : v;
    const fromServer = sortKeys(written) as typeof written;
    expect(
      computeStatus({ session: { ...session, status: fromServer }, now, pod: { name: 'a-runner' } }).patch,
    ).toBeUndefined();
  });
});

describe('finalStatusWritten', () => {
  it('passes by exactly the finished Sessions whose status the controller has completed for their spec', () => {
    const ended = testSession({
      phase: 'Succeeded',
      status: { startTime: '2026-11-22T08:00:01Z', completionTime: '2026-11-22T08:02:00Z' },
    });
    expect(finalStatusWritten(ended)).toBe(false); // the runner's end, not yet recorded
    const settled = { ...ended, status: computeStatus({ session: ended, now }).status };
    expect(finalStatusWritten(settled)).toBe(true);
    // nothing it would write
    expect(computeStatus({ session: settled, now: new Date(now.getTime() + 3_600_000) }).patch).toBeUndefined();
    expect(finalStatusWritten({ ...settled, metadata: { ...settled.metadata, generation: 2 } })).toBe(false);
    const running = testSession({ phase: 'Working' });
    expect(finalStatusWritten({ ...running, status: computeStatus({ session: running, now }).status })).toBe(false);
  });
});
