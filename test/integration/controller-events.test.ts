// Kubernetes Events on a real API server: each transition the controller writes but admission (and each end
// the runner writes, when the controller records it) appears once on the Session, failures as
// Warnings, and `kubectl describe session` shows them. A restart re-reconciles without repeats.
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { REPORTING_CONTROLLER } from '../../controller/events.ts';
import { controllerSuite, createSession, phaseOf, runnerWrites, startController } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { settled } from '../support/passes.ts';
import { kubectlOk } from './chart-cluster.ts';

const t = controllerSuite('ctl-events');

async function eventsOf(name: string): Promise<CoreV1Event[]> {
  const session = await t.sessions.get(t.ns, name);
  const list = await t.kc
    .makeApiClient(CoreV1Api)
    .listNamespacedEvent({ namespace: t.ns, fieldSelector: `involvedObject.uid=${session!.metadata.uid}` });
  return list.items;
}
const summary = async (name: string) => (await eventsOf(name)).map((e) => `${e.type} ${e.reason}`).sort();

describe('Kubernetes Events', () => {
  it('records each transition once, failures as Warnings, and kubectl describe shows them', async () => {
    const phone = '+14155552001';
    const a = await createSession(t.sessions, t.ns, phone);
    const b = await createSession(t.sessions, t.ns, phone, { timeouts: { run: '2s' } });
    await eventually(async () =>
      expect([await phaseOf(t.sessions, t.ns, a), await phaseOf(t.sessions, t.ns, b)]).toEqual(['Starting', 'Queued']),
    );
    await runnerWrites(t.sessions, t.ns, a, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, a, { phase: 'Succeeded', completionTime: new Date().toISOString() });
    await eventually(async () => expect(await phaseOf(t.sessions, t.ns, b)).toBe('Failed'), 15_000);

    await eventually(async () => expect(await summary(a)).toEqual(['Normal Completed']));
    await eventually(async () => expect(await summary(b)).toEqual(['Normal Queued', 'Warning RunTimeout']));
    const timeout = (await eventsOf(b)).find((e) => e.reason === 'RunTimeout')!;
    expect(timeout).toMatchObject({
      reportingComponent: REPORTING_CONTROLLER,
      action: 'Failed',
      involvedObject: { kind: 'Session', name: b },
    });
    expect(timeout.message).toMatch(/longer than 2s/);

    await t.running.stop();
    t.running = await startController(t.kc, t.config());
    await settled(t.running, t.sessions, t.ns, [a, b]);
    expect(await summary(a)).toEqual(['Normal Completed']);
    expect(await summary(b)).toEqual(['Normal Queued', 'Warning RunTimeout']);
    expect((await eventsOf(b)).every((e) => (e.count ?? 1) === 1 && !e.series)).toBe(true);

    const described = (await kubectlOk(['describe', 'session', b, '-n', t.ns])).stdout;
    const shown = described.slice(described.indexOf('Events:'));
    expect(shown).toMatch(/Warning\s+RunTimeout\s+.*tether\.dev\/controller\s+the run took longer than 2s/);
    expect(shown).toMatch(/Normal\s+Queued\s+/);
    expect(shown, 'admission has no Event: the Admitted condition says it').not.toMatch(/PodCreated/);
  });
});
