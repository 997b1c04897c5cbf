// Per-phone queue admission on a real API server: one active Session per phone, the rest in
// creation order; completion admits the next; cancel, reject and timeout clear the queue.
import { describe, expect, it } from 'vitest';
import { runnerName } from '../../common/session/names.ts';
import { createSession, phaseOf, runnerPods, runnerWrites, controllerSuite } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { settled } from '../support/passes.ts';

const t = controllerSuite('ctl-queue', { TETHER_POD_TTL: '0s' });
let phoneSeq = 0;
const newPhone = () => `+1415556${String(1000 + phoneSeq++).padStart(4, '0')}`;
const now = () => new Date().toISOString();

const phases = async (names: string[]) => Promise.all(names.map((n) => phaseOf(t.sessions, t.ns, n)));
const expectPhases = (names: string[], expected: Array<string | undefined>) =>
  eventually(async () => expect(await phases(names)).toEqual(expected));
const podsOf = async (names: string[]) =>
  (await runnerPods(t.kc, t.runners)).filter((p) => names.some((n) => p === runnerName(n)));

describe('per-phone queue', () => {
  it('runs three commands of one phone one at a time, in order', async () => {
    const phone = newPhone();
    const names: string[] = [];
    for (let i = 0; i < 3; i++) names.push(await createSession(t.sessions, t.ns, phone));
    await expectPhases(names, ['Starting', 'Queued', 'Queued']);
    expect(await podsOf(names)).toEqual([runnerName(names[0]!)]);
    const queued = await t.sessions.get(t.ns, names[2]!);
    expect(queued?.status?.conditions?.[0]).toMatchObject({ type: 'Admitted', status: 'False', reason: 'Queued' });

    await runnerWrites(t.sessions, t.ns, names[0]!, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, names[0]!, { phase: 'Succeeded', completionTime: now() });
    await expectPhases(names, ['Succeeded', 'Starting', 'Queued']);
    await eventually(async () => expect(await podsOf(names)).toEqual([runnerName(names[1]!)]));

    await runnerWrites(t.sessions, t.ns, names[1]!, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, names[1]!, {
      phase: 'Failed',
      completionTime: now(),
      result: { message: 'tests failed' },
    });
    await expectPhases(names, ['Succeeded', 'Failed', 'Starting']);
    await eventually(async () => expect(await podsOf(names)).toEqual([runnerName(names[2]!)]));
    const started = await Promise.all(
      names.map(async (n) => Date.parse((await t.sessions.get(t.ns, n))!.status!.startTime!)),
    );
    expect([...started].sort((a, b) => a - b)).toEqual(started);
  });

  it('cancel of the active Session cancels the queued ones; a later command starts normally', async () => {
    const phone = newPhone();
    const names: string[] = [];
    for (let i = 0; i < 3; i++) names.push(await createSession(t.sessions, t.ns, phone));
    await expectPhases(names, ['Starting', 'Queued', 'Queued']);
    await t.sessions.patch(t.ns, names[0]!, { spec: { cancel: true } });
    await expectPhases(names, ['Cancelled', 'Cancelled', 'Cancelled']);
    const ended = await Promise.all(names.map((n) => t.sessions.get(t.ns, n)));
    // The table: Cancel clears the phone's queue; QueueCleared (the swept ones) clears nothing more.
    expect(ended.map((s) => s?.status?.conditions?.find((c) => c.type === 'Finished')?.reason)).toEqual([
      'Cancelled',
      'QueueCleared',
      'QueueCleared',
    ]);
    expect(ended.every((s) => s?.status?.completionTime)).toBe(true);
    expect(ended[2]?.status?.result?.message).toContain(names[0]);
    await eventually(async () => expect(await podsOf(names)).toEqual([]));

    await new Promise((r) => setTimeout(r, 1100));
    const later = await createSession(t.sessions, t.ns, phone);
    await expectPhases([later], ['Starting']);
  });

  it('an approval timeout and a reject clear the queue too', async () => {
    const phone = newPhone();
    const a = await createSession(t.sessions, t.ns, phone, { timeouts: { approval: '1s' } });
    const b = await createSession(t.sessions, t.ns, phone);
    await expectPhases([a, b], ['Starting', 'Queued']);
    await runnerWrites(t.sessions, t.ns, a, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, a, {
      phase: 'AwaitingApproval',
      pending: { id: 'x', kind: 'changes', createdAt: now() },
    });
    await expectPhases([a, b], ['TimedOut', 'Cancelled']);

    const other = newPhone();
    const c = await createSession(t.sessions, t.ns, other);
    const d = await createSession(t.sessions, t.ns, other);
    await expectPhases([c, d], ['Starting', 'Queued']);
    await runnerWrites(t.sessions, t.ns, c, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, c, {
      phase: 'AwaitingApproval',
      pending: { id: 'y', kind: 'changes', createdAt: now() },
    });
    await runnerWrites(t.sessions, t.ns, c, { phase: 'Rejected', completionTime: now() });
    await expectPhases([c, d], ['Rejected', 'Cancelled']);
  });

  it(`a queued Session that fails its spec passes its place \
on; the next starts only once the phone is free`, async () => {
    const phone = newPhone();
    const names: string[] = [];
    for (let i = 0; i < 3; i++) names.push(await createSession(t.sessions, t.ns, phone));
    await expectPhases(names, ['Starting', 'Queued', 'Queued']);
    await t.sessions.patch(t.ns, names[1]!, { spec: { timeouts: { run: '0s' } } });
    await expectPhases(names, ['Starting', 'Failed', 'Queued']);
    await settled(t.running, t.sessions, t.ns, names);
    expect(await phases(names)).toEqual(['Starting', 'Failed', 'Queued']);
    await runnerWrites(t.sessions, t.ns, names[0]!, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, names[0]!, { phase: 'Succeeded', completionTime: now() });
    await expectPhases(names, ['Succeeded', 'Failed', 'Starting']);
  });

  it('refuses a 6th queued command with Failed/QueueFull', async () => {
    const phone = newPhone();
    const names: string[] = [];
    for (let i = 0; i < 7; i++) names.push(await createSession(t.sessions, t.ns, phone));
    await expectPhases(names, ['Starting', 'Queued', 'Queued', 'Queued', 'Queued', 'Queued', 'Failed']);
    const refused = await t.sessions.get(t.ns, names[6]!);
    expect(refused?.status?.conditions?.find((c) => c.type === 'Finished')?.reason).toBe('QueueFull');
    expect(refused?.status?.result?.message).toMatch(/5 commands are already waiting/);
    await t.sessions.patch(t.ns, names[0]!, { spec: { cancel: true } });
    await expectPhases(
      names,
      Array(7)
        .fill('Cancelled')
        .map((p, i) => (i === 6 ? 'Failed' : p)),
    );
  });

  it('keeps other phones independent', async () => {
    const names = await Promise.all(
      [newPhone(), newPhone(), newPhone()].map((p) => createSession(t.sessions, t.ns, p)),
    );
    await expectPhases(names, ['Starting', 'Starting', 'Starting']);
  });
});
