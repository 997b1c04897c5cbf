// Controller benchmark on a real local control plane; the controller runs as its own process,
// with its image's node flags (bench/kube-metrics.ts), so its RSS and CPU are its own. Measures:
//   1. a phone's first command: 500 Sessions of new phones at once (workspace and identity made);
//   2. the API server's raw create rate: 500 Sessions at once in a namespace nobody watches; and the
//      admission floor (bench/admission-floor.ts): the same burst plus the three writes of each
//      admission, made by the benchmark itself with no controller;
//   3. steady state: 500 Sessions of the same phones at once — Session → Pod latency, admission
//      throughput against the raw create rate (the target's ratio) and the burst's own create rate, write requests per admission (apiserver_request_total
//      before/after, the benchmark's own creates taken off), controller CPU per admission;
//   4. reconcile passes per Session lifetime (admission → runner's phases → Pod removed after its TTL);
//   5. controller RSS holding 10,000 Sessions, and the time to start and resync them.
// Usage: npm run bench:controller [-- --sessions 500 --total 10000 --lifetimes 100 --concurrency 32 (the chart's) --profile <dir> --pprof <dir> --first-only]
// (--profile: a V8 CPU profile of each controller process, written to <dir> when it stops;
//  --pprof: the API server's Go CPU profile over the first seconds of the floor and of the steady burst;
//  --first-only: part 1 alone)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import pino from 'pino';
import { apiError, isAlreadyExists } from '../common/kube/errors.ts';
import { createInformer, type Informer } from '../common/kube/informer.ts';
import { SessionClient } from '../common/kube/sessions.ts';
import { phoneHash } from '../common/session/display.ts';
import { LABEL_PHONE_HASH, LABEL_SESSION, sessionName, workspaceName } from '../common/session/names.ts';
import { computeStatus } from '../controller/status.ts';
import { startControlPlane } from '../local/control-plane/control-plane.ts';
import { installSessionCrd } from '../local/control-plane/crd.ts';
import { admissionFloor } from './admission-floor.ts';
import {
  apiserverProfile,
  cpuMs,
  difference,
  startControllerProcess,
  total,
  writeRequests,
  type ControllerProcess,
} from './kube-metrics.ts';
import { machineLoad, percentile, refuseIfBusy } from './machine.ts';
import { atLeast, atMost, report, type Row } from './report.ts';

const { values: args } = parseArgs({
  options: {
    sessions: { type: 'string', default: '500' },
    total: { type: 'string', default: '10000' },
    lifetimes: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '32' },
    profile: { type: 'string' },
    pprof: { type: 'string' },
    'first-only': { type: 'boolean', default: false },
  },
});
const BURST = Number(args.sessions);
const TOTAL = Number(args.total);
const LIFETIMES = Number(args.lifetimes);
const NS = 'bench';
const RUNNERS = 'bench-runners';
const logger = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => new Date().toISOString();
const phoneOf = (i: number) => `+1415${String(2_000_000 + i).padStart(7, '0')}`;
const rows: Row[] = [];
/** The benchmark's own Session creators in a burst. */
const CREATORS = 64;

async function pool<T>(items: T[], width: number, work: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i]!, i);
      }
    }),
  );
}

/** Retries transport errors and 429/5xx (the local apiserver drops HTTP/2 connections under load). */
async function retrying<T>(call: () => Promise<T>, attempts = 8): Promise<T | undefined> {
  for (let n = 0; ; n++) {
    try {
      return await call();
    } catch (error) {
      if (isAlreadyExists(error)) return undefined;
      const code = apiError(error)?.code;
      if (n >= attempts || (code !== undefined && code !== 429 && code < 500)) throw error;
      await sleep(100 * 2 ** n);
    }
  }
}

async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

const createSession = (
  sessions: SessionClient,
  ns: string,
  name: string,
  phone: string,
  prompt = 'script:\nprogress: bench',
) =>
  retrying(() =>
    sessions.create(
      ns,
      name,
      { phone, prompt, repo: { url: 'https://github.com/acme/web.git' }, workspace: workspaceName(phone) },
      { labels: { [LABEL_PHONE_HASH]: phoneHash(phone) } },
    ),
  );

/** Runs `work`, with the API server's CPU profile of its first seconds written to --pprof's folder as `<name>.pprof`. */
async function profiled<T>(kc: KubeConfig, name: string, work: () => Promise<T>): Promise<T> {
  if (!args.pprof) return work();
  mkdirSync(args.pprof, { recursive: true });
  const profile = apiserverProfile(kc, 4);
  const result = await work();
  writeFileSync(join(args.pprof, `${name}.pprof`), await profile);
  return result;
}

interface Bench {
  kc: KubeConfig;
  sessions: SessionClient;
  pods: Informer<V1Pod>;
  podSeen: Map<string, number>;
  controller: ControllerProcess;
}

/** BURST Sessions, one per phone, created at once: when each got its Pod, writes and controller CPU on the way. */
async function burst(b: Bench, tag: string) {
  const names = Array.from({ length: BURST }, (_, i) => sessionName(phoneOf(i), new Date(), tag));
  const created = new Map<string, number>();
  const [writesBefore, conflictsBefore, cpuBefore, passesBefore] = [
    await writeRequests(b.kc),
    await writeRequests(b.kc, '409'),
    cpuMs(b.controller.child.pid!),
    await b.controller.metric('tether_reconcile_total'),
  ];
  const start = performance.now();
  let createRate = 0;
  await profiled(b.kc, tag, async () => {
    await pool(names, CREATORS, async (name, i) => {
      created.set(name, performance.now());
      await createSession(b.sessions, NS, name, phoneOf(i));
    });
    createRate = BURST / ((performance.now() - start) / 1000);
    await until(() => names.every((n) => b.podSeen.has(n)), 300_000, `the ${tag} burst's Pods`);
  });
  const seconds = (performance.now() - start) / 1000;
  // The CPU profile's clock is the monotonic one: these bounds cut the burst out of it.
  if (args.profile)
    console.log(
      `   (${tag} burst in the controller's CPU profile: ${Number(process.hrtime.bigint() / 1000n) - Math.round(seconds * 1e6)}–${Number(process.hrtime.bigint() / 1000n)} µs)`,
    );
  await until(async () => (await b.controller.metric('tether_workqueue_depth')) === 0, 60_000, 'queue drained');
  await sleep(1000);
  const all = difference(writesBefore, await writeRequests(b.kc));
  // The API server's own housekeeping (its Lease, the kubernetes Endpoints); the controller writes neither here (no leader election).
  const writes = new Map([...all].filter(([key]) => !/ (leases|endpoints)$/.test(key)));
  const latencies = names.map((n) => b.podSeen.get(n)! - created.get(n)!);
  const conflicts = difference(conflictsBefore, await writeRequests(b.kc, '409'));
  return {
    names,
    seconds,
    latencies,
    writes,
    conflicts,
    housekeeping: total(all) - total(writes),
    createRate,
    perAdmission: (total(writes) - BURST) / BURST,
    cpuMsPerAdmission: (cpuMs(b.controller.child.pid!) - cpuBefore) / BURST,
    passesPerSession: ((await b.controller.metric('tether_reconcile_total')) - passesBefore) / BURST,
  };
}

function printBurst(title: string, r: Awaited<ReturnType<typeof burst>>): void {
  console.log(
    `\n${title}: ${BURST} Sessions at once (created at ${r.createRate.toFixed(0)}/s), last Pod after ${r.seconds.toFixed(1)} s (${(BURST / r.seconds).toFixed(0)} admissions/s; load ${machineLoad()})`,
  );
  console.log(
    `   Session → Pod p50 ${percentile(r.latencies, 50)} ms · p90 ${percentile(r.latencies, 90)} ms · p99 ${percentile(r.latencies, 99)} ms · max ${percentile(r.latencies, 100)} ms`,
  );
  console.log(
    `   write requests per admission ${r.perAdmission.toFixed(2)} (the benchmark's ${BURST} Session creates taken off): ${[...r.writes].map(([k, v]) => `${k} ${v}`).join(', ')}; the API server's own: ${r.housekeeping}`,
  );
  console.log(
    `   409 answers per admission ${(total(r.conflicts) / BURST).toFixed(3)}${[...r.conflicts].map(([k, v]) => `; ${k} ${v}`).join('')}`,
  );
  console.log(
    `   controller CPU ${r.cpuMsPerAdmission.toFixed(1)} ms per admission; ${r.passesPerSession.toFixed(2)} reconcile passes per Session`,
  );
}

/** The runner's part, as bench/relay.ts's status writes: Working → AwaitingApproval → Publishing → Succeeded. */
async function live(b: Bench, names: string[]): Promise<void> {
  await pool(names, 16, async (name) => {
    await retrying(() => b.sessions.patchStatus(NS, name, { phase: 'Working' }));
    await retrying(() =>
      b.sessions.patchStatus(NS, name, {
        phase: 'AwaitingApproval',
        pending: { id: 'p', kind: 'changes', createdAt: now() },
      }),
    );
    await retrying(() => b.sessions.patchStatus(NS, name, { phase: 'Publishing', pending: null } as never));
    await retrying(() =>
      b.sessions.patchStatus(NS, name, {
        phase: 'Succeeded',
        completionTime: now(),
        result: { prUrl: 'https://github.com/acme/web/pull/1' },
      }),
    );
  });
  await until(() => names.every((n) => !b.pods.get(`${RUNNERS}/${n}-runner`)), 120_000, 'their Pods removed');
}

/** The raw create rate of this API server now: BURST Sessions at once where no controller watches. */
async function rawCreateRate(b: Bench): Promise<number> {
  await b.kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'bench-raw' } } });
  const start = performance.now();
  await pool(
    Array.from({ length: BURST }, (_, i) => i),
    64,
    async (i) => {
      await createSession(b.sessions, 'bench-raw', sessionName(phoneOf(i), new Date(), 'raw0'), phoneOf(i));
    },
  );
  return BURST / ((performance.now() - start) / 1000);
}

async function history(b: Bench): Promise<void> {
  const extra = Array.from({ length: TOTAL - 2 * BURST }, (_, i) => ({
    phone: phoneOf(BURST + (i % 1000)),
    name: sessionName(phoneOf(BURST + (i % 1000)), new Date(), `h${i}`),
  }));
  const start = Date.now();
  await pool(extra, 64, async ({ phone, name }) => {
    await createSession(b.sessions, NS, name, phone, 'script:\nprogress: history');
    // Finished as the controller leaves them (Finished condition, display), so the restart measures a steady-state resync.
    const made = await retrying(() =>
      b.sessions.patchStatus(NS, name, {
        phase: 'Succeeded',
        startTime: now(),
        completionTime: now(),
        progress: [{ seq: 1, at: now(), text: 'Edited src/App.tsx' }],
        result: { summary: 'done' },
      }),
    );
    const settled = made && computeStatus({ session: made, now: new Date() }).patch;
    if (settled) await retrying(() => b.sessions.patchStatus(NS, name, settled));
  });
  console.log(
    `\n5. ${TOTAL} Sessions in the namespace (${extra.length} finished ones added in ${((Date.now() - start) / 1000).toFixed(1)} s)`,
  );
}

const CONTROLLER_ENV = {
  TETHER_NAMESPACE: NS,
  TETHER_RUNNER_NAMESPACE: RUNNERS,
  TETHER_POD_TTL: '1s',
  TETHER_HISTORY_COUNT: '100000',
  TETHER_HISTORY_MAX_AGE: '720h',
  TETHER_CONCURRENCY: args.concurrency!,
};

async function restartAndResync(b: Bench, kubeconfig: string): Promise<void> {
  await b.controller.stop();
  const start = Date.now();
  const fresh = await startControllerProcess(kubeconfig, CONTROLLER_ENV, args.profile);
  // Polled every 250 ms: each scrape walks the 10,000 cached Sessions on the controller's one thread.
  await until(
    async () =>
      (await fresh.metric('tether_reconcile_total')) >= TOTAL && (await fresh.metric('tether_workqueue_depth')) === 0,
    600_000,
    'resync',
    250,
  );
  const resync = (Date.now() - start) / 1000;
  rows.push(atMost(`controller: start + resync of ${TOTAL.toLocaleString('en')} Sessions`, resync, 5, 's'));
  await sleep(2000);
  const mib = async (name: string) => (await fresh.metric(name)) / 2 ** 20;
  const rss = await mib('tether_controller_process_resident_memory_bytes');
  rows.push(atMost(`controller: RSS holding ${TOTAL.toLocaleString('en')} Sessions`, rss, 200, 'MiB'));
  console.log(
    `   controller RSS ${rss.toFixed(0)} MiB (V8 heap used ${(await mib('tether_controller_nodejs_heap_size_used_bytes')).toFixed(0)} MiB of ${(await mib('tether_controller_nodejs_heap_size_total_bytes')).toFixed(0)} MiB); start + full resync in ${resync.toFixed(1)} s; ${await fresh.metric('tether_reconcile_total')} passes`,
  );
  await fresh.stop();
}

async function main(): Promise<void> {
  refuseIfBusy();
  // Without kube-controller-manager: its own writes (PV binder Events, Endpoints, Leases) would be counted as the controller's.
  const plane = await startControlPlane({ controllerManager: false });
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfig);
  try {
    await installSessionCrd(kc);
    for (const name of [NS, RUNNERS])
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    const podSeen = new Map<string, number>();
    const pods = createInformer<V1Pod>({ kube: kc, path: `/api/v1/namespaces/${RUNNERS}/pods`, logger });
    pods.onChange((_key, pod) => {
      const session = pod?.metadata?.labels?.[LABEL_SESSION];
      if (session && !podSeen.has(session)) podSeen.set(session, performance.now());
    });
    await pods.start();
    const b: Bench = {
      kc,
      sessions: new SessionClient(kc),
      pods,
      podSeen,
      controller: await startControllerProcess(plane.kubeconfig, CONTROLLER_ENV, args.profile),
    };

    const first = await burst(b, 'f000');
    printBurst('1. First command of each phone (workspace and runner identity made)', first);
    if (args['first-only']) return;
    await live(b, first.names);
    const raw = await rawCreateRate(b);
    console.log(
      `\n2. Raw create rate of this API server: ${raw.toFixed(0)} Sessions/s (${BURST} at once, nobody watching; load ${machineLoad()})`,
    );
    const floor = await admissionFloor(kc, {
      burst: BURST,
      concurrency: Number(args.concurrency),
      creators: CREATORS,
      phoneOf,
      retrying,
      pool,
      timed: (work) => profiled(kc, 'floor', work),
    });
    console.log(
      `   Admission floor: ${floor.toFixed(0)} admissions/s — the same burst with each admission's Role patch, Pod create and status patch made by the benchmark, no controller (load ${machineLoad()})`,
    );
    const steady = await burst(b, 's000');
    printBurst('3. Steady state: the next command of each phone', steady);
    rows.push(atMost('controller: write requests per admission (steady)', steady.perAdmission, 3));
    // The target's ratio: against the raw create rate measured in the same run (the burst's own rate is printed above).
    rows.push(atLeast('controller: admission rate ÷ raw create rate', BURST / steady.seconds / raw, 0.75));
    console.log(
      `   against the uncontended raw create rate: ${(BURST / steady.seconds / raw).toFixed(2)}; against the admission floor: ${(BURST / steady.seconds / floor).toFixed(2)} (the floor ÷ raw: ${(floor / raw).toFixed(2)})`,
    );
    // Not the issue's target: the same 0.75, against what the API server can do for these writes at all.
    rows.push(atLeast('controller: admission rate ÷ admission floor', BURST / steady.seconds / floor, 0.75));

    const cohort = steady.names.slice(0, LIFETIMES);
    const before = await b.controller.metric('tether_reconcile_total');
    await live(b, cohort);
    await sleep(1000);
    const lifetime = ((await b.controller.metric('tether_reconcile_total')) - before) / LIFETIMES;
    console.log(
      `\n4. Reconcile passes per Session lifetime: ${(steady.passesPerSession + lifetime).toFixed(1)} (${steady.passesPerSession.toFixed(1)} to admission, ${lifetime.toFixed(1)} from Working to Pod removed)`,
    );
    rows.push(atMost('controller: reconcile passes per Session lifetime', steady.passesPerSession + lifetime, 8));
    await live(b, steady.names.slice(LIFETIMES));
    pods.stop();

    await history(b);
    await restartAndResync(b, plane.kubeconfig);
    report(rows);
  } finally {
    await plane.stop();
  }
}

await main();
