// Part 1 and 3 of the controller benchmark: BURST Sessions at once, each phone's, until each has its Pod.
import { sessionName } from '../common/session/names.ts';
import { pool, sleep, until } from './async.ts';
import {
  BURST,
  CREATORS,
  NS,
  args,
  benchPhoneHash,
  createSession,
  phoneOf,
  profiled,
  type Bench,
} from './controller-setup.ts';
import { cpuMs, difference, total, writeRequests } from './kube-metrics.ts';
import { machineLoad, percentile } from './machine.ts';

/**
 * BURST Sessions, one per phone, created at once: when each got its Pod, writes and controller CPU on the way.
 */
export async function burst(b: Bench, tag: string, admitted: ReadonlyMap<string, unknown> = b.podSeen) {
  const names = Array.from({ length: BURST }, (_, i) => sessionName(benchPhoneHash(phoneOf(i)), new Date(), tag));
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
    await until(() => names.every((n) => admitted.has(n)), 300_000, `the ${tag} burst's admissions`);
  });
  const seconds = (performance.now() - start) / 1000;
  // The CPU profile's clock is the monotonic one: these bounds cut the burst out of it.
  if (args.profile) {
    const endUs = Number(process.hrtime.bigint() / 1000n);
    console.log(`   (${tag} burst in the controller's CPU profile: ${endUs - Math.round(seconds * 1e6)}–${endUs} µs)`);
  }
  await until(async () => (await b.controller.metric('tether_workqueue_depth')) === 0, 60_000, 'queue drained');
  await sleep(1000);
  const all = difference(writesBefore, await writeRequests(b.kc));
  // The API server's own housekeeping (its Lease, the kubernetes Endpoints); the controller writes neither here
  // (no leader election).
  const writes = new Map([...all].filter(([key]) => !/ (leases|endpoints)$/.test(key)));
  const at = (n: string) => (b.podSeen === admitted ? b.podSeen.get(n)! : b.startedSeen.get(n)!.at);
  const latencies = names.map((n) => at(n) - created.get(n)!);
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

/** `admission`: what ends an admission, a Pod made (cold) or the Session `Starting` on a live Pod. */
export function printBurst(title: string, r: Awaited<ReturnType<typeof burst>>, admission = 'Pod'): void {
  console.log(
    `\n${title}: ${BURST} Sessions at once (created at ${r.createRate.toFixed(0)}/s), ` +
      `last ${admission} after ${r.seconds.toFixed(1)} s (${(BURST / r.seconds).toFixed(0)} admissions/s; ` +
      `load ${machineLoad()})`,
  );
  console.log(
    `   Session → ${admission} ${[50, 90, 99].map((p) => `p${p} ${percentile(r.latencies, p)} ms · `).join('')}` +
      `max ${percentile(r.latencies, 100)} ms`,
  );
  console.log(
    `   write requests per admission ${r.perAdmission.toFixed(2)} (the benchmark's ${BURST} Session creates ` +
      `taken off): ${[...r.writes].map(([k, v]) => `${k} ${v}`).join(', ')}; the API server's own: ${r.housekeeping}`,
  );
  console.log(
    `   409 answers per admission ${(total(r.conflicts) / BURST).toFixed(3)}` +
      [...r.conflicts].map(([k, v]) => `; ${k} ${v}`).join(''),
  );
  console.log(
    `   controller CPU ${r.cpuMsPerAdmission.toFixed(1)} ms per admission; ` +
      `${r.passesPerSession.toFixed(2)} reconcile passes per Session`,
  );
}
