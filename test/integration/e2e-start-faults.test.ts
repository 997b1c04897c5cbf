// End to end: a start that never comes and a workspace that is full. A runner image the node
// does not have leaves the Pod in ErrImagePull/ImagePullBackOff (the local node agent reports it
// as a kubelet does); at the start deadline the Session fails, the phone is told why and what to
// do, and the Kubernetes reason is in the Session's conditions and Events. A workspace volume on
// a real 4 KiB tmpfs (mounted over the node agent's folder for the claim) makes the runner's git
// checkout fail with ENOSPC; the Session fails with a message naming the full volume.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { EventsV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { workspaceName } from '../../common/session/names.ts';
import { loadConfig } from '../../controller/config.ts';
import { relayCaughtUp } from '../support/caught-up.ts';
import { startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

const started: E2E[] = [];
const mounts: string[] = [];
afterAll(async () => {
  await Promise.all(started.map((e) => e.stop()));
  for (const dir of mounts) execFileSync('umount', ['-l', dir]);
});
const start = async (options: Parameters<typeof startE2E>[0]) => {
  const e2e = await startE2E(options);
  started.push(e2e);
  return e2e;
};
const THREE_MINUTES = 180_000;

describe('end to end: a start that never comes', () => {
  it(`a runner image that does not exist → Failed, the phone is told why and what to do, the Kubernetes reason is \
recorded`, async () => {
    const number = '+14155550171';
    // The test's start deadline is short; the install's default leaves the relay a minute of the 3.
    expect(loadConfig({ TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY }).startTimeoutMs).toBeLessThanOrEqual(
      THREE_MINUTES - 60_000,
    );
    const e2e = await start({
      numbers: [number],
      controllerEnv: { TETHER_RUNNER_IMAGE: 'registry.invalid/tether-runner:missing', TETHER_START_TIMEOUT: '6s' },
    });
    const phone = e2e.phone(number);
    const sent = Date.now();
    await phone.send('add a farewell function');
    const told = await phone.next(/could not start/, 60_000);
    const toldAfterMs = Date.now() - sent;
    console.log(`[start-faults] missing image: phone told after ${toldAfterMs} ms (deadline 6 s)`);
    expect(told.body).toMatch(
      /runner image "registry\.invalid\/tether-runner:missing" could not be pulled \((ErrImagePull|ImagePullBackOff)\)/,
    );
    expect(told.body).toMatch(/Ask your operator .* then send the command again/);

    const [session] = await e2e.list();
    expect(session!.status?.phase).toBe('Failed');
    const conditions = session!.status?.conditions ?? [];
    expect(conditions).toContainEqual(
      expect.objectContaining({
        type: 'Started',
        status: 'False',
        reason: expect.stringMatching(/^(ErrImagePull|ImagePullBackOff)$/),
      }),
    );
    expect(conditions).toContainEqual(expect.objectContaining({ type: 'Finished', reason: 'StartTimeout' }));
    const events = await eventually(async () => {
      const list = await e2e.kubeConfig
        .makeApiClient(EventsV1Api)
        .listNamespacedEvent({ namespace: e2e.stack.namespace });
      const reasons = list.items
        .filter((e) => e.regarding?.name === session!.metadata.name)
        .map((e) => `${e.type} ${e.reason}`);
      // Level-based: the controller may see only the later of ErrImagePull and ImagePullBackOff.
      expect(reasons).toContain('Warning StartTimeout');
      expect(reasons.filter((r) => /^Warning (ErrImagePull|ImagePullBackOff)$/.test(r)).length).toBeGreaterThan(0);
      return reasons;
    });
    console.log(`[start-faults] missing image: Session events ${events.join(', ')}`);
    await relayCaughtUp(e2e, phone);
    expect(
      phone.received().filter((m) => /❌/.test(m.body)),
      'told once',
    ).toHaveLength(1);
  }, 120_000);

  it.skipIf(process.getuid?.() !== 0)(
    'a full workspace volume (a real tmpfs: mounting needs root) → Failed with a plain message naming the cause',
    async () => {
      const number = '+14155550172';
      const e2e = await start({ numbers: [number] });
      const volume = join(
        e2e.stateDir,
        'volumes',
        e2e.stack.runnerNamespace,
        workspaceName(e2e.stack.phoneHash(number)),
      );
      mkdirSync(volume, { recursive: true });
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4k,mode=0777', 'tmpfs', volume]);
      mounts.push(volume);
      const phone = e2e.phone(number);
      await phone.send('add a farewell function');
      const told = await phone.next(/❌/, 60_000);
      expect(told.body).toMatch(/workspace volume is full \(no space left on device\)/);
      expect(told.body).toMatch(/Ask your operator for a larger workspace/);
      expect(told.body).not.toMatch(/git |ENOSPC|at .*\.ts:\d+/);
      const [session] = await e2e.list();
      expect(session!.status).toMatchObject({
        phase: 'Failed',
        result: { message: expect.stringMatching(/^The workspace volume is full/) },
      });
    },
    120_000,
  );
});
