import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admit, clearedBy } from '../../controller/admission.ts';
import { decideActive, decideTerminal, specProblem } from '../../controller/decide.ts';
import type { Phase } from '../../common/session/schema.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';

const at = (s: number) => new Date(Date.parse('2026-11-22T08:00:00Z') + s * 1000).toISOString();
const queued = (name: string, created: number, since = created) => testSession({
  name, created: at(created), phase: 'Queued',
  status: { conditions: [{ type: 'Admitted', status: 'False', reason: 'Queued', message: '', lastTransitionTime: at(since) }] },
});
const session = (name: string, created: number, phase?: Phase, extra: object = {}) => testSession({ name, created: at(created), phase, ...extra });

describe('admit', () => {
  it.each([
    ['the only Session runs', [], 'a', { kind: 'run' }],
    ['waits behind an active one', [session('x', 0, 'Working')], 'a', { kind: 'wait', position: 1 }],
    ['the oldest waiting runs when none is active', [queued('b', 70)], 'a', { kind: 'run' }],
    ['a younger one waits for the oldest', [session('x', 0, 'Succeeded'), queued('b', 5)], 'c', { kind: 'wait', position: 1 }],
    ['same second: name decides', [session('a0', 10)], 'a1', { kind: 'wait', position: 1 }],
    ['the 6th waiting is refused', [session('x', 0, 'Working'), ...[1, 2, 3, 4, 5].map((i) => queued(`q${i}`, i))], 'z', { kind: 'full', queued: 5 }],
    ['the 5th waiting is accepted', [session('x', 0, 'Working'), ...[1, 2, 3, 4].map((i) => queued(`q${i}`, i))], 'z', { kind: 'wait', position: 5 }],
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
    const swept = session('y', 1, 'Cancelled', { status: { completionTime: at(31) } });
    expect(clearedBy(queued('b', 20, 31.5), [swept]), 'a Session cancelled by the sweep does not sweep again').toBeUndefined();
    for (const phase of ['Rejected', 'TimedOut'] as const) {
      expect(admit(queued('b', 10), [session('x', 0, phase, { status: { completionTime: at(30) } })], 5).kind).toBe('cleared');
    }
    for (const phase of ['Succeeded', 'Failed'] as const) {
      expect(admit(queued('b', 10), [session('x', 0, phase, { status: { completionTime: at(30) } })], 5).kind).toBe('run');
    }
  });
});

const pod = (phase: string, extra: Partial<V1Pod['status']> = {}, meta: object = {}): V1Pod => ({ metadata: { name: 'p', ...meta }, status: { phase, ...extra } });
const config = unitConfig({ defaultRunTimeoutMs: 3_600_000, defaultApprovalTimeoutMs: 1_800_000 });

describe('decideActive', () => {
  const working = testSession({ phase: 'Working', status: { startTime: at(0) } });
  it('waits for the run deadline while the Pod runs', () => {
    expect(decideActive(working, pod('Running'), new Date(at(60)), config)).toEqual({ deletePod: false, requeueAfterMs: 3_540_000 });
  });
  it('fails a run past its deadline and stops the Pod', () => {
    expect(decideActive(working, pod('Running'), new Date(at(3600)), config)).toMatchObject({ event: { type: 'RunTimeout' }, deletePod: true });
  });
  it('times out an approval from pending.createdAt with the Session\'s own timeout', () => {
    const waiting = testSession({ phase: 'AwaitingApproval', timeouts: { approval: '10m' }, status: { startTime: at(0), pending: { id: 'p', kind: 'changes', createdAt: at(100) } } });
    expect(decideActive(waiting, pod('Running'), new Date(at(400)), config)).toEqual({ deletePod: false, requeueAfterMs: 300_000 });
    expect(decideActive(waiting, pod('Running'), new Date(at(700)), config)).toMatchObject({ event: { type: 'ApprovalTimeout' }, deletePod: true });
  });
  it('reports a lost, crashed, evicted or silently finished runner as PodLost', () => {
    expect(decideActive(working, undefined, new Date(at(1)), config)).toMatchObject({ event: { type: 'PodLost' }, message: expect.stringMatching(/disappeared/) });
    const crashed = pod('Failed', { containerStatuses: [{ name: 'runner', image: '', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 2, reason: 'Error' } } }] });
    expect(decideActive(working, crashed, new Date(at(1)), config)).toMatchObject({ event: { type: 'PodLost' }, exitCode: 2, message: 'the runner exited with code 2 (Error)', deletePod: true });
    expect(decideActive(working, pod('Failed', { reason: 'Evicted', message: 'low on memory' }), new Date(at(1)), config)).toMatchObject({ message: 'runner pod p failed: Evicted — low on memory' });
    expect(decideActive(working, pod('Succeeded'), new Date(at(1)), config)).toMatchObject({ exitCode: 0, message: /without reporting/ });
    expect(decideActive(working, pod('Running', {}, { deletionTimestamp: new Date() }), new Date(at(1)), config)).toMatchObject({ event: { type: 'PodLost' }, deletePod: false });
  });
});

describe('decideTerminal', () => {
  const retention = { podTtlMs: 60_000, historyCount: 2, historyMaxAgeMs: 86_400_000 };
  const finished = (name: string, done: number, reason = 'Completed', phase: Phase = 'Succeeded') => testSession({
    name, phase, status: { completionTime: at(done), conditions: [{ type: 'Finished', status: 'True', reason, message: '', lastTransitionTime: at(done) }] },
  });
  it('keeps a finished Pod for its TTL, then deletes it', () => {
    expect(decideTerminal(finished('a', 0), pod('Succeeded'), [], new Date(at(30)), retention)).toEqual({ deletePod: false, deleteSession: false, requeueAfterMs: 30_000 });
    expect(decideTerminal(finished('a', 0), pod('Succeeded'), [], new Date(at(60)), retention)).toMatchObject({ deletePod: true, deleteSession: false });
  });
  it('stops at once a Pod still running after the controller ended the Session', () => {
    expect(decideTerminal(finished('a', 0, 'Cancelled', 'Cancelled'), pod('Running'), [], new Date(at(1)), retention).deletePod).toBe(true);
    expect(decideTerminal(finished('a', 0, 'Completed'), pod('Running'), [], new Date(at(1)), retention).deletePod).toBe(false);
  });
  it('keeps the newest historyCount finished Sessions per phone and none older than the max age', () => {
    const all = [finished('a', 0), finished('b', 10), finished('c', 20), testSession({ name: 'd', phase: 'Working' })];
    const now = new Date(at(100));
    expect(all.slice(0, 3).map((s) => decideTerminal(s, undefined, all, now, retention).deleteSession)).toEqual([true, false, false]);
    expect(decideTerminal(finished('c', 20), undefined, all, new Date(at(20 + 86_400)), retention).deleteSession).toBe(true);
  });
});

describe('specProblem', () => {
  it('accepts a well-formed Session and names the field of a bad one', () => {
    expect(specProblem(testSession())).toBeUndefined();
    const bad = testSession();
    bad.spec.workspace = 'ws-elsewhere';
    expect(specProblem(bad)).toMatch(/^spec\.workspace "ws-elsewhere"/);
    const longName = testSession({ name: 'x'.repeat(64) });
    expect(specProblem(longName)).toMatch(/longer than 63/);
    for (const url of ['git@github.com:acme/web.git', 'ssh://git@host/repo', '/srv/git/repo', 'file:///srv/repo']) {
      const ok = testSession();
      ok.spec.repo.url = url;
      expect(specProblem(ok), url).toBeUndefined();
    }
  });
});
