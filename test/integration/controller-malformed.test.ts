// Sessions the CRD schema accepts but that cannot run: each fails once with a clear
// message, gets no Pod, and is not retried over and over.
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { workspaceName } from '../../common/session/names.ts';
import { createSession, reconcilePasses, runnerPods, controllerSuite } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { settled } from '../support/passes.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const t = controllerSuite('ctl-bad');

const phone = '+14155557000';

describe('malformed Sessions', () => {
  it.each([
    [
      'an unknown workspace',
      { workspace: 'ws-0000000000000000' },
      {},
      /spec\.workspace "ws-0000000000000000" is not this phone's workspace/,
    ],
    [
      'a phone-hash label of another phone',
      {},
      { 'tether.dev/phone-hash': testPhoneHash('+14155550000') },
      /label tether\.dev\/phone-hash.*does not match/,
    ],
    [
      'a repository host not on the list',
      { repo: { url: 'https://evil.example/acme/web.git' } },
      {},
      new RegExp(
        /spec\.repo\.url points at the host evil\.example, /.source +
          /which is not on this install's list of repository hosts \(github\.com\)/.source,
      ),
    ],
    ['a zero run timeout', { timeouts: { run: '0s' } }, {}, /spec\.timeouts\.run must be longer than 0s/],
  ])(
    'fails a Session with %s: Failed/InvalidSpec, a clear message, no Pod, no retry storm',
    async (_label, spec, labels, message) => {
      const before = await reconcilePasses(t.running.metrics);
      const name = await createSession(t.sessions, t.ns, phone, spec, labels);
      const failed = await eventually(async () => {
        const s = await t.sessions.get(t.ns, name);
        expect(s?.status?.phase).toBe('Failed');
        return s!;
      });
      expect(failed.status?.conditions?.find((c) => c.type === 'Finished')).toMatchObject({
        reason: 'InvalidSpec',
        message: expect.stringMatching(message),
      });
      expect(failed.status?.result?.message).toMatch(message);
      await settled(t.running, t.sessions, t.ns, [name]);
      const after = await reconcilePasses(t.running.metrics);
      expect(after.errors - before.errors).toBe(0);
      // A few passes for this Session (the marker's one of them); an informer restart in the window (a
      // relist under load) adds at most one pass for each Session of the namespace, the earlier cases'
      // included. A retry storm is many passes of this one Session, far beyond that.
      const relisted = (after.watchRestarts - before.watchRestarts) * (await t.sessions.list(t.ns)).items.length;
      expect(after.total - before.total).toBeLessThanOrEqual(4 + relisted);
      expect((await runnerPods(t.kc, t.runners)).some((p) => p.startsWith(name))).toBe(false);
    },
  );

  it('fails a Session whose workspace PVC belongs to another phone', async () => {
    const victim = '+14155557001';
    await t.kc.makeApiClient(CoreV1Api).createNamespacedPersistentVolumeClaim({
      namespace: t.runners,
      body: {
        metadata: {
          name: workspaceName(testPhoneHash(victim)),
          labels: {
            'tether.dev/phone-hash': testPhoneHash('+14155557002'),
            'app.kubernetes.io/component': 'workspace',
          },
        },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    const name = await createSession(t.sessions, t.ns, victim);
    await eventually(async () => {
      const s = await t.sessions.get(t.ns, name);
      expect(s?.status?.phase).toBe('Failed');
      expect(s?.status?.result?.message).toMatch(/belongs to another phone/);
    });
    expect((await runnerPods(t.kc, t.runners)).some((p) => p.startsWith(name))).toBe(false);
  });
});
