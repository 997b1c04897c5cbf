// History retention: per phone only the newest TETHER_HISTORY_COUNT finished Sessions stay;
// older ones are deleted; Pods go after their TTL; the phone's workspace and runner identity stay.
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { runnerIdentityName, workspaceName } from '../../common/session/names.ts';
import { controllerSuite, createSession, phaseOf, podOf, runnerWrites } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const t = controllerSuite('ctl-hist', { TETHER_HISTORY_COUNT: '2', TETHER_POD_TTL: '0s' });

describe('history retention', () => {
  it(`keeps the newest two finished Sessions of a phone, removes the rest, keeps the workspace and the phone's runner \
identity (its Role naming the Session that runs)`, async () => {
    const phone = '+14155553001';
    const names: string[] = [];
    const rbac = t.kc.makeApiClient(RbacAuthorizationV1Api);
    const identity = runnerIdentityName(testPhoneHash(phone));
    for (let i = 0; i < 3; i++) {
      const name = await createSession(t.sessions, t.ns, phone);
      names.push(name);
      await eventually(async () => expect(await phaseOf(t.sessions, t.ns, name)).toBe('Starting'));
      const role = await rbac.readNamespacedRole({ namespace: t.ns, name: identity });
      // The Role names the running Session and those whose Pods the controller still has cached:
      // the previous one at most, its Pod gone from the API (awaited below) but perhaps not yet from the cache.
      expect(role.rules?.[0]?.resourceNames).toContain(name);
      expect(role.rules?.[0]?.resourceNames?.length).toBeLessThanOrEqual(2);
      await runnerWrites(t.sessions, t.ns, name, { phase: 'Working' });
      await runnerWrites(t.sessions, t.ns, name, {
        phase: 'Succeeded',
        completionTime: new Date(Date.now() + i).toISOString(),
      });
      await eventually(async () => expect(await podOf(t.kc, t.runners, name)).toBeUndefined());
    }
    await eventually(async () => expect(await t.sessions.get(t.ns, names[0]!)).toBeUndefined());
    expect(await phaseOf(t.sessions, t.ns, names[1]!)).toBe('Succeeded');
    expect(await phaseOf(t.sessions, t.ns, names[2]!)).toBe('Succeeded');
    const core = t.kc.makeApiClient(CoreV1Api);
    await eventually(async () => expect((await core.listNamespacedPod({ namespace: t.runners })).items).toEqual([]));
    expect(
      (
        await core.readNamespacedPersistentVolumeClaim({
          namespace: t.runners,
          name: workspaceName(testPhoneHash(phone)),
        })
      ).metadata?.name,
    ).toBe(workspaceName(testPhoneHash(phone)));
    expect((await core.readNamespacedServiceAccount({ namespace: t.runners, name: identity })).metadata?.name).toBe(
      identity,
    );
    const roles = await rbac.listNamespacedRole({ namespace: t.ns });
    expect(
      roles.items.map((r) => r.metadata?.name),
      'one Role per phone, not per Session',
    ).toEqual([identity]);
  });
});
