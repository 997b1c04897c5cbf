// History retention: per phone only the newest TETHER_HISTORY_COUNT finished Sessions stay;
// older ones are deleted (what they own goes with them through owner references); Pods go after their TTL.
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isNotFound } from '../../common/kube/errors.ts';
import { runnerName, workspaceName } from '../../common/session/names.ts';
import { controllerSuite, createSession, phaseOf, runnerWrites } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';

const t = controllerSuite('ctl-hist', { TETHER_HISTORY_COUNT: '2', TETHER_POD_TTL: '0s' });

describe('history retention', () => {
  it('keeps the newest two finished Sessions of a phone, removes the rest (their RBAC goes with them through the garbage collector), keeps the workspace', async () => {
    const phone = '+14155553001';
    const names: string[] = [];
    const rbac = t.kc.makeApiClient(RbacAuthorizationV1Api);
    for (let i = 0; i < 3; i++) {
      const name = await createSession(t.sessions, t.ns, phone);
      names.push(name);
      await eventually(async () => expect(await phaseOf(t.sessions, t.ns, name)).toBe('Starting'));
      const role = await rbac.readNamespacedRole({ namespace: t.ns, name: runnerName(name) });
      expect(role.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Session', name, blockOwnerDeletion: true });
      await runnerWrites(t.sessions, t.ns, name, { phase: 'Working' });
      await runnerWrites(t.sessions, t.ns, name, { phase: 'Succeeded', completionTime: new Date(Date.now() + i).toISOString() });
      await new Promise((r) => setTimeout(r, 20));
    }
    await eventually(async () => expect(await t.sessions.get(t.ns, names[0]!)).toBeUndefined());
    expect(await phaseOf(t.sessions, t.ns, names[1]!)).toBe('Succeeded');
    expect(await phaseOf(t.sessions, t.ns, names[2]!)).toBe('Succeeded');
    const roleOf = (session: string) => rbac.readNamespacedRole({ namespace: t.ns, name: runnerName(session) }).then(() => 'exists', (error: unknown) => {
      if (isNotFound(error)) return 'gone';
      throw error;
    });
    await eventually(async () => expect(await roleOf(names[0]!)).toBe('gone'), 30_000);
    expect(await roleOf(names[2]!)).toBe('exists');
    const core = t.kc.makeApiClient(CoreV1Api);
    await eventually(async () => expect((await core.listNamespacedPod({ namespace: t.ns })).items).toEqual([]));
    expect((await core.readNamespacedPersistentVolumeClaim({ namespace: t.ns, name: workspaceName(phone) })).metadata?.name).toBe(workspaceName(phone));
  });
});
