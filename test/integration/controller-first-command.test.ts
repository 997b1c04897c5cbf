// A phone's first command makes its workspace PVC, whose watch event wakes the phone's Sessions
// while the pass that admits the command is still running; that pass's status write reaches the
// Session cache only later. The pass the wake asks for must read the controller's own write, not
// the older cached Session: admitting a first command writes its status once and meets no 409.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { describe, expect, it } from 'vitest';
import { isConflict } from '../../common/kube/errors.ts';
import { kubeClusterOps, type ClusterOps } from '../../controller/cluster.ts';
import { controllerSuite, createSession, phaseOf, reconcilePasses, startController } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { settled } from '../support/passes.ts';

const t = controllerSuite('ctl-first');
const PHONES = 16;
/** Long enough for the workspace's and the Pod's watch events to reach the controller before the status write. */
const STATUS_WRITE_DELAY_MS = 400;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The real operations, counting status writes and their 409 answers per Session; each write goes out a little late. */
function counting(ops: ClusterOps) {
  const writes = new Map<string, number>();
  const conflicts = new Map<string, number>();
  const bump = (counts: Map<string, number>, name: string) => counts.set(name, (counts.get(name) ?? 0) + 1);
  const wrapped: ClusterOps = {
    ...ops,
    patchStatus: async (namespace, name, status, resourceVersion) => {
      await sleep(STATUS_WRITE_DELAY_MS);
      bump(writes, name);
      try {
        return await ops.patchStatus(namespace, name, status, resourceVersion);
      } catch (error) {
        if (isConflict(error)) bump(conflicts, name);
        throw error;
      }
    },
  };
  return { ops: wrapped, writes, conflicts };
}

describe("a phone's first command", () => {
  it('is admitted with one status write and no 409, though its workspace wakes it mid-pass', async () => {
    await t.running.stop();
    const watched = counting(kubeClusterOps(connectionFromKubeConfig(t.kc)));
    const running = await startController(t.kc, t.config(), watched.ops);
    try {
      const phones = Array.from({ length: PHONES }, (_, i) => `+1415557${String(1000 + i)}`);
      const names = await Promise.all(phones.map((phone) => createSession(t.sessions, t.ns, phone)));
      await eventually(
        async () =>
          expect(await Promise.all(names.map((n) => phaseOf(t.sessions, t.ns, n)))).toEqual(
            names.map(() => 'Starting'),
          ),
        20_000,
      );
      // The wakes the workspaces asked for have run: they come before a pass that saw a later marker (a wake
      // after the controller knows its Starting write wakes nothing).
      await settled(running, t.sessions, t.ns, names);
      expect(Object.fromEntries(watched.conflicts)).toEqual({});
      expect(names.map((n) => watched.writes.get(n))).toEqual(names.map(() => 1));
      expect((await reconcilePasses(running.metrics)).errors).toBe(0);
    } finally {
      await running.stop();
    }
  });
});
