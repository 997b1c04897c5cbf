// Fault suite: the controller as a real process (`node controller/main.ts`), SIGKILLed at random
// points and restarted, under a steady stream of Sessions from several phones; a stand-in runner
// moves admitted Sessions on, and some Sessions are left to run into their run timeout. Afterwards:
// no Pod made twice (checkPodsAndClaims) and per phone one workspace claim and one git store claim
// (every uid the watch ever saw), each timeout honoured — on time, or within moments of the restart
// when it passed while the controller was down — and each Session entered each phase exactly once.
// The relay sends a phone message per phase a Session enters (once per Session and phase), so a phase
// written twice or flipping back is what a duplicate message would need; none happens. Kills: 15 by default (CI),
// 100 with TETHER_FAULTS_FULL=1; TETHER_FAULT_SEED replays a run.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isConflict } from '../../common/kube/errors.ts';
import { storeClaimName } from '../../controller/store-claim.ts';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { runnerName, workspaceName } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { isTerminal } from '../../common/session/state-machine.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { faultCount, faultSeed } from '../support/config.ts';
import { createSession } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { controllerProcess, record, type Recording } from '../support/faults.ts';
import { random } from '../support/random.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const KILLS = faultCount(15, 100);
const RUN_TIMEOUT_MS = 4000;
/**
 * How soon after its deadline (or after the next controller is ready, when it passed while down) a
 * Session must end: a restarted controller first works through every Session of the namespace (on a
 * shared 2-core machine under load; the figures in docs/controller.md are typically far below).
 */
const SLACK_MS = 15_000;

let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;
beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('fault-ctl'));
});
afterAll(async () => deleteNamespace(kc, ns));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stuck = (s: Session) => s.spec.timeouts?.run === `${RUN_TIMEOUT_MS / 1000}s`;

/** The runner's part, as the runner writes it (optimistically): Working at start, then done — except stuck ones. */
async function standInRunner(stop: () => boolean): Promise<void> {
  const workingSince = new Map<string, number>();
  while (!stop()) {
    for (const s of (await sessions.list(ns)).items) {
      const name = s.metadata.name!;
      // Written against what was read: a conflict (the controller wrote meanwhile) is looked at again next round.
      const write = (status: object) =>
        sessions.patchStatus(ns, name, status, s.metadata.resourceVersion).catch((error: unknown) => {
          if (!isConflict(error)) throw error;
        });
      if (s.status?.phase === 'Starting') await write({ phase: 'Working' });
      if (s.status?.phase !== 'Working' || stuck(s)) continue;
      if (!workingSince.has(name)) workingSince.set(name, Date.now());
      else if (Date.now() - workingSince.get(name)! > 300)
        await write({ phase: 'Succeeded', completionTime: new Date().toISOString() });
    }
    await sleep(150);
  }
}

/**
 * When a controller could act on a deadline: at it if one was up then, else as soon as the next one
 * was ready — one chance per controller that ran after the deadline.
 */
const chancesAfter = (deadline: number, ups: Array<[number, number]>) =>
  ups.filter(([, to]) => to > deadline).map(([from]) => Math.max(from, deadline));

function checkDeadlines(all: Session[], ups: Array<[number, number]>) {
  let passedWhileDown = 0;
  let worstLateMs = 0;
  for (const s of all.filter((x) => stuck(x) && x.status?.startTime)) {
    const deadline = Date.parse(s.status!.startTime!) + RUN_TIMEOUT_MS;
    const ended = Date.parse(s.status!.completionTime!);
    const chances = chancesAfter(deadline, ups);
    if (chances[0]! > deadline) passedWhileDown++;
    expect(s.status?.conditions?.find((c) => c.type === 'Finished')?.reason, s.metadata.name).toBe('RunTimeout');
    expect(ended, `${s.metadata.name} ended before its deadline`).toBeGreaterThanOrEqual(deadline - 1000);
    // Killed again before it acted: the last chance before the end counts.
    const late = ended - (chances.filter((t) => t <= ended).at(-1) ?? chances[0]!);
    expect(late, `${s.metadata.name} ended ${late} ms after the controller could act`).toBeLessThanOrEqual(SLACK_MS);
    worstLateMs = Math.max(worstLateMs, late);
  }
  return { passedWhileDown, worstLateMs };
}

const countBy = (values: unknown[]) =>
  values.reduce<Record<string, number>>((acc, v) => ({ ...acc, [String(v)]: (acc[String(v)] ?? 0) + 1 }), {});

/**
 * No Pod made twice: a Session admitted cold has its own Pod (`<session>-runner`), one bound warm has none of its
 * own, and one whose Pod was lost has the replacement (`<session>-runner-1`) once; the Pod its status names was
 * made once, and no other Pod exists. Per phone, its workspace claim and the git store beside it, each made once.
 */
function checkPodsAndClaims(all: Session[], rec: Recording) {
  const made = (pod: string) => rec.podUids.get(`${ns}/${pod}`)?.size ?? 0;
  for (const s of all) {
    const name = s.metadata.name!;
    const { podName, runnerStart, runnerRestarts } = s.status ?? {};
    const what = `pods ever made for ${name} (${s.status?.phase}, ${runnerStart ?? 'unstarted'})`;
    expect(made(runnerName(name)), what).toBe(podName !== undefined && runnerStart !== 'warm' ? 1 : 0);
    expect(made(runnerName(name, 1)), `${what}: replacements`).toBe(runnerRestarts ?? 0);
    if (podName) expect(made(podName), `${name}'s pod ${podName}`).toBe(1);
  }
  const ownPods = all.flatMap((s) => [runnerName(s.metadata.name!), runnerName(s.metadata.name!, 1)]);
  const strays = [...rec.podUids.keys()].filter((key) => !ownPods.map((pod) => `${ns}/${pod}`).includes(key));
  expect(strays, 'pods of no Session').toEqual([]);
  const phones = [...new Set(all.map((s) => s.spec.phone))];
  const claims = phones.map((p) => workspaceName(testPhoneHash(p))).flatMap((claim) => [claim, storeClaimName(claim)]);
  expect([...rec.pvcUids.keys()].sort()).toEqual(claims.map((claim) => `${ns}/${claim}`).sort());
  expect(
    [...rec.pvcUids.values()].every((u) => u.size === 1),
    'a PVC made twice',
  ).toBe(true);
}

describe('fault suite: controller SIGKILLed', () => {
  it(
    `keeps one Pod per Session, one workspace and git store per phone, its deadlines and each phase once \
across ${KILLS} kills`,
    async () => {
      const seed = faultSeed();
      const rand = random(seed);
      const logDir = mkdtempSync(join(tmpdir(), 'tether-fault-ctl-'));
      const env = { TETHER_HISTORY_COUNT: '10000', TETHER_POD_TTL: '1s' };
      const phones = Array.from({ length: 8 }, (_, i) => `+1415555${String(9100 + i)}`);
      const rec = await record(kc, ns);
      let streaming = true;
      let done = false;
      const runner = standInRunner(() => done);
      let created = 0;
      const stream = (async () => {
        while (streaming) {
          await createSession(
            sessions,
            ns,
            phones[Math.floor(rand() * phones.length)]!,
            rand() < 0.25 ? { timeouts: { run: `${RUN_TIMEOUT_MS / 1000}s` } } : {},
          );
          created++;
          await sleep(800);
        }
      })();

      const ups: Array<[number, number]> = [];
      const started = Date.now();
      const readyMs: number[] = [];
      for (let kill = 0; kill < KILLS; kill++) {
        const spawned = Date.now();
        const { proc, ready } = await controllerProcess(inject('kubeconfig'), ns, logDir, env);
        // Mostly at a random point of its work; now and then while it is still starting.
        const duringStart = rand() < 0.15;
        if (duringStart) await sleep(rand() * 1500);
        else await ready;
        const from = Date.now();
        if (!duringStart) readyMs.push(from - spawned);
        await sleep(duringStart ? 0 : rand() * 2500);
        proc.signal('SIGKILL');
        await proc.exited;
        if (!duringStart) ups.push([from, Date.now()]);
        await sleep(rand() < 0.3 ? 1000 + rand() * 3000 : rand() * 300);
      }
      streaming = false;
      await stream;
      const last = await controllerProcess(inject('kubeconfig'), ns, logDir, env);
      await last.ready;
      ups.push([Date.now(), Infinity]);
      try {
        const all = await eventually(
          async () => {
            const items = (await sessions.list(ns)).items;
            expect(
              items.filter((s) => !isTerminal(s.status?.phase)).map((s) => `${s.metadata.name} ${s.status?.phase}`),
              `seed ${seed}`,
            ).toEqual([]);
            return items;
          },
          60_000,
          250,
        );
        done = true;
        await runner;
        await sleep(1500);

        checkPodsAndClaims(all, rec);
        const deadlines = checkDeadlines(all, ups);
        const repeated = [...rec.phases].filter(([, phases]) => new Set(phases).size !== phases.length);
        expect(repeated, `seed ${seed}: a phase entered twice`).toEqual([]);
        const outcome = (phase: string) => all.filter((s) => s.status?.phase === phase).length;
        console.log(
          `[fault-controller] seed ${seed}: ${KILLS} kills in ${Math.round((Date.now() - started) / 1000)} s, ` +
            `${created} Sessions ` +
            `(${outcome('Succeeded')} Succeeded, ${outcome('Failed')} Failed), ` +
            `${all.filter((x) => stuck(x) && x.status?.startTime).length} run timeouts, ` +
            `${deadlines.passedWhileDown} passed while the controller was down, ended at most ` +
            `${deadlines.worstLateMs} ms after the controller could act; ` +
            `${[...rec.podUids.values()].reduce((n, u) => n + u.size, 0)} Pods, ${rec.pvcUids.size} PVCs; ` +
            `controller ready ${Math.min(...readyMs)}–${Math.max(...readyMs)} ms after spawn; ` +
            `Failed reasons ` +
            JSON.stringify(
              countBy(
                all
                  .filter((x) => x.status?.phase === 'Failed')
                  .map((x) => x.status?.conditions?.find((c) => c.type === 'Finished')?.reason),
              ),
            ),
        );
      } finally {
        done = true;
        rec.stop();
        await last.proc.stop(5000);
      }
    },
    120_000 + KILLS * 20_000,
  );
});
