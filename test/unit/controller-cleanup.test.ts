import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { Phase } from '../../common/session/schema.ts';
import { decideTerminal, SPEND_HELD_MS } from '../../controller/cleanup.ts';
import { testSession } from './controller-fixtures.ts';

const at = (s: number) => new Date(Date.parse('2026-11-22T08:00:00Z') + s * 1000).toISOString();
const pod = (phase: string): V1Pod => ({ metadata: { name: 'p' }, status: { phase } });
const retention = { podTtlMs: 60_000, keepAliveMs: 0, historyCount: 2, historyMaxAgeMs: 86_400_000 };
const finished = (name: string, done: number, reason = 'Completed', phase: Phase = 'Succeeded') =>
  testSession({
    name,
    phase,
    status: {
      podName: 'p',
      completionTime: at(done),
      conditions: [{ type: 'Finished', status: 'True', reason, message: '', lastTransitionTime: at(done) }],
    },
  });

describe('decideTerminal: the effects an end still asks for', () => {
  it('removes at once a Pod the status never named (an admission whose status write failed)', () => {
    const { status, ...rest } = finished('a', 0, 'Completed');
    const unnamed = { ...rest, status: { ...status, podName: undefined } };
    expect(decideTerminal(unnamed, pod('Pending'), [], new Date(at(1)), retention).effects).toContain('DeletePod');
    const invalid = finished('b', 0, 'InvalidSpec', 'Failed');
    const orphan = { ...invalid, status: { ...invalid.status, podName: undefined } };
    expect(decideTerminal(orphan, pod('Pending'), [], new Date(at(1)), retention).effects).toContain('DeletePod');
  });

  it('keeps a finished Pod for its TTL, then deletes it (DeletePod)', () => {
    expect(decideTerminal(finished('a', 0), pod('Succeeded'), [], new Date(at(30)), retention)).toEqual({
      effects: ['StartNextQueued'],
      deleteSessions: [],
      requeueAfterMs: 30_000,
    });
    expect(decideTerminal(finished('a', 0), pod('Succeeded'), [], new Date(at(60)), retention).effects).toEqual([
      'StartNextQueued',
      'DeletePod',
    ]);
  });

  it('stops at once a Pod still running after the controller ended the Session', () => {
    for (const [reason, phase] of [
      ['Cancelled', 'Cancelled'],
      ['QueueCleared', 'Cancelled'],
      ['ApprovalTimeout', 'TimedOut'],
      ['RunTimeout', 'Failed'],
      ['PodLost', 'Failed'],
    ] as const) {
      expect(
        decideTerminal(finished('a', 0, reason, phase), pod('Running'), [], new Date(at(1)), retention).effects,
        reason,
      ).toContain('DeletePod');
    }
    expect(
      decideTerminal(finished('a', 0, 'Completed'), pod('Running'), [], new Date(at(1)), retention).effects,
    ).not.toContain('DeletePod');
  });

  it('reads the phone-wide effects from the state machine, also for an end the runner wrote', () => {
    const effects = (phase: Phase, extra: object = {}) =>
      decideTerminal(
        testSession({ phase, status: { completionTime: at(0) }, ...extra }),
        undefined,
        [],
        new Date(at(1)),
        retention,
      ).effects;
    expect(effects('Rejected')).toEqual(['ClearPhoneQueue']);
    expect(effects('Cancelled', { cancel: true })).toEqual(['ClearPhoneQueue']);
    expect(effects('Succeeded')).toEqual(['StartNextQueued']);
    expect(effects('Failed')).toEqual(['StartNextQueued']);
    expect(
      decideTerminal(finished('a', 0, 'QueueCleared', 'Cancelled'), undefined, [], new Date(at(1)), retention).effects,
    ).toEqual([]);
    expect(
      decideTerminal(finished('a', 0, 'QueueFull', 'Failed'), undefined, [], new Date(at(1)), retention).effects,
    ).toEqual([]);
  });

  it("removes the phone's finished Sessions beyond historyCount from any pass, and itself past the max age", () => {
    const all = [finished('a', 0), finished('b', 10), finished('c', 20), testSession({ name: 'd', phase: 'Working' })];
    const now = new Date(at(100));
    for (const s of all.slice(0, 3))
      expect(decideTerminal(s, undefined, all, now, retention).deleteSessions, s.metadata.name).toEqual(['a']);
    expect(
      decideTerminal(finished('c', 20), undefined, all, new Date(at(20 + 86_400)), retention).deleteSessions,
    ).toEqual(['a', 'c']);
    expect(decideTerminal(finished('c', 20), undefined, all, now, retention).requeueAfterMs).toBe(
      (20 + 86_400 - 100) * 1000,
    );
  });
});

describe("decideTerminal: the day's spend outlives the history limits", () => {
  const costly = (name: string, done: number, costUsd: number) =>
    testSession({
      name,
      phase: 'Succeeded',
      status: {
        completionTime: at(done),
        result: { costUsd },
        conditions: [
          { type: 'Finished', status: 'True', reason: 'Completed', message: '', lastTransitionTime: at(done) },
        ],
      },
    });

  it('keeps a Session that spent money beyond the count for SPEND_HELD_MS, cheap newer ones notwithstanding', () => {
    const expensive = costly('a', 0, 9.5);
    const all = [expensive, finished('b', 10), finished('c', 20), finished('d', 30), costly('e', 5, 0)];
    const now = new Date(at(100));
    expect(decideTerminal(finished('d', 30), undefined, all, now, retention).deleteSessions).toEqual(['b', 'e']);
    expect(decideTerminal(expensive, undefined, all, now, retention)).toMatchObject({
      deleteSessions: ['b', 'e'],
      requeueAfterMs: SPEND_HELD_MS - 100_000,
    });
    const later = new Date(at(SPEND_HELD_MS / 1000));
    expect(decideTerminal(expensive, undefined, all, later, retention).deleteSessions).toEqual(['b', 'e', 'a']);
  });

  it('keeps it past a max age shorter than the budget day', () => {
    const short = { ...retention, historyMaxAgeMs: 60_000 };
    expect(decideTerminal(costly('a', 0, 1), undefined, [], new Date(at(120)), short)).toMatchObject({
      deleteSessions: [],
      requeueAfterMs: SPEND_HELD_MS - 120_000,
    });
    expect(decideTerminal(finished('b', 0), undefined, [], new Date(at(120)), short).deleteSessions).toEqual(['b']);
  });
});
