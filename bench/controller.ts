// Controller benchmark on a real local control plane; the controller runs as its own process
// (node controller/main.ts) so its RSS is its own. Prints:
//   1. Session → runner Pod created latency, p50/p99, for 500 Sessions created at once;
//   2. reconcile passes per Session lifetime (create → Starting → Working → AwaitingApproval
//      → Publishing → Succeeded → Pod removed after its TTL);
//   3. controller RSS holding 10,000 Sessions, and how long it took to resync them.
// Usage: npm run bench:controller [-- --sessions 500 --total 10000 --lifetimes 100]
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ApiextensionsV1Api, CoreV1Api, KubeConfig, loadYaml, type V1CustomResourceDefinition, type V1Pod } from '@kubernetes/client-node';
import pino from 'pino';
import { apiError, isAlreadyExists } from '../common/kube/errors.ts';
import { createInformer } from '../common/kube/informer.ts';
import { SessionClient } from '../common/kube/sessions.ts';
import { phoneHash } from '../common/session/display.ts';
import { LABEL_PHONE_HASH, sessionName, workspaceName } from '../common/session/names.ts';
import { CRD_PATH } from '../common/session/crd-yaml.ts';
import { computeStatus } from '../controller/status.ts';
import { freePort, startControlPlane } from '../local/control-plane/control-plane.ts';

const { values: args } = parseArgs({ options: {
  sessions: { type: 'string', default: '500' }, total: { type: 'string', default: '10000' }, lifetimes: { type: 'string', default: '100' },
  concurrency: { type: 'string', default: '16' },
} });
const BURST = Number(args.sessions);
const TOTAL = Number(args.total);
const LIFETIMES = Number(args.lifetimes);
const logger = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pool<T>(items: T[], width: number, work: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const i = next++;
      await work(items[i]!, i);
    }
  }));
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

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const phoneOf = (i: number) => `+1415${String(2_000_000 + i).padStart(7, '0')}`;

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function installCrd(kc: KubeConfig): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const body = loadYaml<V1CustomResourceDefinition>(readFileSync(CRD_PATH, 'utf8'));
  await api.createCustomResourceDefinition({ body });
  await until(async () => (await api.readCustomResourceDefinition({ name: body.metadata!.name! })).status?.conditions
    ?.some((c) => c.type === 'Established' && c.status === 'True') ?? false, 30_000, 'CRD established');
}

interface ControllerProcess {
  child: ChildProcess;
  metric(name: string): Promise<number>;
  stop(): Promise<void>;
}

async function startControllerProcess(kubeconfig: string, namespace: string, env: Record<string, string>): Promise<ControllerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['controller/main.ts'], {
    env: {
      KUBECONFIG: kubeconfig, TETHER_NAMESPACE: namespace, TETHER_METRICS_PORT: String(port),
      TETHER_LEADER_ELECTION: 'false', TETHER_LOG_LEVEL: 'warn', TETHER_CONCURRENCY: args.concurrency!, ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const metrics = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  await until(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, 60_000, 'controller ready');
  return {
    child,
    async metric(name) {
      const text = await metrics();
      let sum = 0;
      for (const line of text.split('\n')) {
        const [series, value] = line.split(' ');
        if (!line.startsWith('#') && series?.split('{')[0] === name) sum += Number(value);
      }
      return sum;
    },
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const plane = await startControlPlane();
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const sessions = new SessionClient(kc);
  try {
    await installCrd(kc);
    const ns = 'bench';
    await core.createNamespace({ body: { metadata: { name: ns } } });
    console.log(`control plane ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${plane.server})`);

    const controller = await startControllerProcess(plane.kubeconfig, ns, { TETHER_POD_TTL: '1s', TETHER_HISTORY_COUNT: '100000', TETHER_HISTORY_MAX_AGE: '720h' });

    // 1. Burst: BURST Sessions of distinct phones created at once.
    const created = new Map<string, number>();
    const podSeen = new Map<string, number>();
    const pods = createInformer<V1Pod>({ kube: kc, path: `/api/v1/namespaces/${ns}/pods`, logger });
    pods.onChange((key, pod) => {
      const session = key.slice(ns.length + 1, -'-runner'.length);
      if (pod && !podSeen.has(session)) podSeen.set(session, performance.now());
    });
    await pods.start();
    const names = Array.from({ length: BURST }, (_, i) => sessionName(phoneOf(i), new Date(), 'b000'));
    const burstStart = performance.now();
    await pool(names, 64, async (name, i) => {
      created.set(name, performance.now());
      await retrying(() => sessions.create(ns, name, { phone: phoneOf(i), prompt: 'script:\nprogress: bench', repo: { url: 'https://github.com/acme/web.git' }, workspace: workspaceName(phoneOf(i)) },
        { labels: { [LABEL_PHONE_HASH]: phoneHash(phoneOf(i)) } }));
    });
    const createdIn = performance.now() - burstStart;
    await until(() => names.every((n) => podSeen.has(n)), 300_000, 'all burst Pods');
    const allIn = performance.now() - burstStart;
    const latencies = names.map((n) => podSeen.get(n)! - created.get(n)!).sort((a, b) => a - b);
    console.log(`\n1. Session → Pod created, ${BURST} Sessions at once (creates took ${(createdIn / 1000).toFixed(1)} s; last Pod after ${(allIn / 1000).toFixed(1)} s)`);
    const writeRate = BURST / (createdIn / 1000);
    console.log(`   for scale: the bench's own ${BURST} creates ran at ${writeRate.toFixed(0)}/s; each admission writes 6 objects`
      + ` (PVC, ServiceAccount, Role, RoleBinding, Pod, status), ${((BURST * 6) / (allIn / 1000)).toFixed(0)} writes/s over the burst`);
    console.log(`   p50 ${percentile(latencies, 50).toFixed(0)} ms · p90 ${percentile(latencies, 90).toFixed(0)} ms · p99 ${percentile(latencies, 99).toFixed(0)} ms · max ${latencies.at(-1)!.toFixed(0)} ms`);

    // 2. Reconcile passes per lifetime, on LIFETIMES of the burst Sessions.
    await until(async () => (await controller.metric('tether_workqueue_depth')) === 0, 60_000, 'queue drained');
    await sleep(500);
    const before = await controller.metric('tether_reconcile_total');
    const cohort = names.slice(0, LIFETIMES);
    const now = () => new Date().toISOString();
    await pool(cohort, 16, async (name) => {
      await retrying(() => sessions.patchStatus(ns, name, { phase: 'Working' }));
      await retrying(() => sessions.patchStatus(ns, name, { phase: 'AwaitingApproval', pending: { id: 'p', kind: 'changes', createdAt: now() } }));
      await retrying(() => sessions.patchStatus(ns, name, { phase: 'Publishing', pending: null } as never));
      await retrying(() => sessions.patchStatus(ns, name, { phase: 'Succeeded', completionTime: now(), result: { prUrl: 'https://github.com/acme/web/pull/1' } }));
    });
    await until(() => cohort.every((n) => !pods.get(`${ns}/${n}-runner`)), 60_000, 'cohort Pods removed');
    await sleep(1000);
    const after = await controller.metric('tether_reconcile_total');
    const burstPasses = before / BURST;
    console.log(`\n2. Reconcile passes per Session lifetime: ${((after - before) / LIFETIMES + burstPasses).toFixed(1)}`);
    console.log(`   (${burstPasses.toFixed(1)} from creation to Starting, ${((after - before) / LIFETIMES).toFixed(1)} from Working to Pod removed; 4 runner status writes + 1 Pod deletion)`);
    pods.stop();

    // 3. RSS with TOTAL Sessions: add finished Sessions up to TOTAL, restart the controller, resync.
    const extra = Array.from({ length: TOTAL - BURST }, (_, i) => ({ i: BURST + i, name: sessionName(phoneOf(BURST + (i % 1000)), new Date(), `h${i}`) }));
    const fillStart = Date.now();
    await pool(extra, 64, async ({ i, name }) => {
      const phone = phoneOf(BURST + ((i - BURST) % 1000));
      await retrying(() => sessions.create(ns, name, { phone, prompt: 'script:\nprogress: history', repo: { url: 'https://github.com/acme/web.git' }, workspace: workspaceName(phone) },
        { labels: { [LABEL_PHONE_HASH]: phoneHash(phone) } }));
      // Finished as the controller leaves them (Finished condition, display), so the restart measures a steady-state resync.
      const made = await retrying(() => sessions.patchStatus(ns, name, { phase: 'Succeeded', startTime: now(), completionTime: now(), progress: [{ seq: 1, at: now(), text: 'Edited src/App.tsx' }], result: { summary: 'done' } }));
      const settled = made && computeStatus({ session: made, now: new Date() }).patch;
      if (settled) await retrying(() => sessions.patchStatus(ns, name, settled));
    });
    console.log(`\n3. ${TOTAL} Sessions in the namespace (${TOTAL - BURST} finished ones added in ${((Date.now() - fillStart) / 1000).toFixed(1)} s)`);
    await controller.stop();
    const restart = Date.now();
    const fresh = await startControllerProcess(plane.kubeconfig, ns, { TETHER_POD_TTL: '1s', TETHER_HISTORY_COUNT: '100000', TETHER_HISTORY_MAX_AGE: '720h' });
    await until(async () => (await fresh.metric('tether_reconcile_total')) >= TOTAL && (await fresh.metric('tether_workqueue_depth')) === 0, 600_000, 'resync');
    const resync = Date.now() - restart;
    await sleep(2000);
    const rss = await fresh.metric('tether_controller_process_resident_memory_bytes');
    const heap = await fresh.metric('tether_controller_nodejs_heap_size_used_bytes');
    const heapTotal = await fresh.metric('tether_controller_nodejs_heap_size_total_bytes');
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
    console.log(`   controller RSS ${mib(rss)} (V8 heap used ${mib(heap)} of ${mib(heapTotal)}); start + full resync of ${TOTAL} in ${(resync / 1000).toFixed(1)} s`);
    console.log(`   reconcile passes during the resync: ${await fresh.metric('tether_reconcile_total')}`);
    await fresh.stop();
  } finally {
    await plane.stop();
  }
}

await main();
