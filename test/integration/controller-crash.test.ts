// Crash safety: the controller is killed at random points — before or after any PVC, RBAC,
// Pod or status write — and restarted, until it has been killed 50 times. Afterwards every
// admitted Session has exactly one Pod, waiting ones none, and each phone exactly one workspace PVC
// (and its git store claim).
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { ANNOTATION_SESSION_UID, runnerName, workspaceName } from '../../common/session/names.ts';
import { isActive } from '../../common/session/state-machine.ts';
import { kubeClusterOps, type ClusterOps } from '../../controller/cluster.ts';
import { storeClaimName } from '../../controller/store-claim.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { createSession, runnerWrites, startController, testConfig } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { random } from '../support/random.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('ctl-crash'));
});
afterAll(async () => deleteNamespace(kc, ns));

class Crash extends Error {}

/** Every call may die before it reaches the server or after it did; once dead, all calls fail. */
function crashing(ops: ClusterOps, rand: () => number, p: number): { ops: ClusterOps; dead: () => boolean } {
  let dead = false;
  const wrapped = Object.fromEntries(
    Object.entries(ops).map(([name, fn]) => [
      name,
      async (...args: unknown[]) => {
        if (dead || rand() < p) {
          dead = true;
          throw new Crash(`killed before ${name}`);
        }
        const result = await (fn as (...a: unknown[]) => Promise<unknown>)(...args);
        if (rand() < p) {
          dead = true;
          throw new Crash(`killed after ${name}`);
        }
        return result;
      },
    ]),
  ) as unknown as ClusterOps;
  return { ops: wrapped, dead: () => dead };
}

/** Kills to reach; the windows they take depend on the random draws alone, not on the machine's speed. */
const KILLS = 50;
/** A window with a new Session kills with odds over 1/3: this many windows without 50 kills is a fault. */
const MAX_WINDOWS = 400;

describe('crash safety', () => {
  it(`keeps exactly one Pod per admitted Session and one workspace per phone \
across ${KILLS} random kills`, async () => {
    const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);
    const rand = random(seed);
    const phones = ['+14155558001', '+14155558002', '+14155558003', '+14155558004'];
    const names: string[] = [];
    const config = testConfig(ns, { TETHER_POD_TTL: '1h' });
    let kills = 0;
    let windows = 0;
    for (; kills < KILLS && windows < MAX_WINDOWS; windows++) {
      if (rand() < 0.5 || names.length < 2)
        names.push(await createSession(sessions, ns, phones[Math.floor(rand() * phones.length)]!));
      const faults = crashing(kubeClusterOps(connectionFromKubeConfig(kc)), rand, 0.45);
      const running = await startController(kc, config, faults.ops);
      // A window ends with the kill, or, when the draws spare it, once every Session has had a whole pass.
      const rested = () => names.every((name) => running.passes.finished(`${ns}/${name}`) > 0);
      while (!faults.dead() && !rested()) await new Promise((r) => setTimeout(r, 10));
      if (faults.dead()) kills++;
      await running.stop();
      if (rand() < 0.25) {
        const active = (await sessions.list(ns)).items.find((s) => s.status?.phase === 'Starting');
        if (active)
          await runnerWrites(sessions, ns, active.metadata.name!, {
            phase: 'Succeeded',
            completionTime: new Date().toISOString(),
          });
      }
    }
    console.log(`[crash] seed ${seed}: ${kills} kills in ${windows} windows, ${names.length} Sessions`);
    expect(kills, `seed ${seed}: kills in ${windows} windows`).toBe(KILLS);

    const clean = await startController(kc, config);
    try {
      await eventually(async () => {
        const all = (await sessions.list(ns)).items.filter((s) => names.includes(s.metadata.name!));
        expect(
          all.every((s) => s.status?.phase !== undefined),
          `seed ${seed}`,
        ).toBe(true);
        for (const phone of phones) {
          const mine = all.filter((s) => s.spec.phone === phone);
          const waiting = mine.filter((s) => s.status?.phase === 'Queued');
          const active = mine.filter((s) => isActive(s.status?.phase));
          expect(active.length, `seed ${seed}: active sessions of ${phone}`).toBe(
            waiting.length > 0 ? 1 : active.length,
          );
          expect(active.length).toBeLessThanOrEqual(1);
        }
      }, 20_000);
      const core = kc.makeApiClient(CoreV1Api);
      const pods = (await core.listNamespacedPod({ namespace: ns })).items;
      const all = (await sessions.list(ns)).items;
      for (const s of all) {
        // Kept live (keep-alive), a Pod has no owner reference: it names its Session by uid.
        const owned = pods.filter((p) => p.metadata?.annotations?.[ANNOTATION_SESSION_UID] === s.metadata.uid);
        const admitted = s.status?.podName !== undefined;
        expect(
          owned.map((p) => p.metadata?.name),
          `seed ${seed}: pods of ${s.metadata.name} (${s.status?.phase})`,
        ).toEqual(admitted ? [runnerName(s.metadata.name!)] : []);
      }
      expect(pods.length).toBe(all.filter((s) => s.status?.podName).length);
      const pvcs = (await core.listNamespacedPersistentVolumeClaim({ namespace: ns })).items
        .map((p) => p.metadata!.name!)
        .sort();
      const usedPhones = [...new Set(all.map((s) => s.spec.phone))];
      // Each phone's workspace and, beside it, the supervisor's git store claim.
      const claims = usedPhones.map((phone) => workspaceName(testPhoneHash(phone)));
      expect(pvcs).toEqual([...claims, ...claims.map(storeClaimName)].sort());
    } finally {
      await clean.stop();
    }
  }, 600_000);
});
