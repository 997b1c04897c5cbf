// Part 6 of the controller benchmark: the next command of each phone while its runner Pod is live. The
// controller restarts with a keep-alive; a burst of first commands makes each phone's Pod (cold), the
// benchmark plays the kubelet (each Pod Running, its containers started) and the runner (each Session to
// Succeeded: the Pods are kept), then a burst of next commands is bound to those Pods (`RunnerBound`, no Pod
// made). Both bursts run against the same controller process in the same run, so their ratio compares.
import { CoreV1Api } from '@kubernetes/client-node';
import { LABEL_SESSION } from '../common/session/names.ts';
import { retrying, pool, sleep, until } from './async.ts';
import { burst, printBurst } from './controller-burst.ts';
import { BURST, CONTROLLER_ENV, NS, RUNNERS, args, now, type Bench } from './controller-setup.ts';
import { startControllerProcess, total } from './kube-metrics.ts';
import { percentile } from './machine.ts';
import { atLeast, atMost, type Row } from './report.ts';

export const KEEP_ALIVE = '10m';

/** Each Pod Running with its containers started, as a kubelet reports it. */
async function podsRunning(b: Bench, names: string[]): Promise<void> {
  const core = b.kc.makeApiClient(CoreV1Api);
  const startedAt = new Date();
  const running = (name: string) => ({ name, ready: true, restartCount: 0, image: 'runner', imageID: '' });
  await pool(names, 16, async (session) => {
    const pod = b.pods.list().find((p) => p.metadata?.labels?.[LABEL_SESSION] === session);
    if (!pod) throw new Error(`no Pod for ${session}`);
    const state = { running: { startedAt } };
    await retrying(() =>
      core.replaceNamespacedPodStatus({
        name: pod.metadata!.name!,
        namespace: RUNNERS,
        body: {
          ...pod,
          status: {
            phase: 'Running',
            startTime: startedAt,
            initContainerStatuses: [{ ...running('agent'), state, started: true }],
            containerStatuses: [{ ...running('runner'), state, started: true }],
          },
        },
      }),
    );
  });
}

/** The runner's phases of a run, up to Succeeded; the Pod stays (kept alive). */
async function finished(b: Bench, names: string[]): Promise<void> {
  await pool(names, 16, async (name) => {
    await retrying(() => b.sessions.patchStatus(NS, name, { phase: 'Working' }));
    await retrying(() =>
      b.sessions.patchStatus(NS, name, { phase: 'Succeeded', completionTime: now(), result: { summary: 'done' } }),
    );
  });
  await until(async () => (await b.controller.metric('tether_workqueue_depth')) === 0, 60_000, 'queue drained');
}

export async function liveBursts(b: Bench, kubeconfig: string): Promise<Row[]> {
  await b.controller.stop();
  b.controller = await startControllerProcess(
    kubeconfig,
    { ...CONTROLLER_ENV, TETHER_RUNNER_KEEP_ALIVE: KEEP_ALIVE },
    args.profile,
  );
  const cold = await burst(b, 'c000');
  printBurst(`6. Cold, keep-alive ${KEEP_ALIVE}: the next command of each phone, no live Pod`, cold);
  await podsRunning(b, cold.names);
  await finished(b, cold.names);
  await sleep(1000);
  const podsBefore = b.podSeen.size;
  const warm = await burst(b, 'l000', b.startedSeen);
  printBurst('   Live: the next command of each phone, its runner Pod live', warm, 'Starting');
  const warmStarts = warm.names.filter((n) => b.startedSeen.get(n)?.start === 'warm').length;
  const podsMade = b.podSeen.size - podsBefore;
  const [coldRate, warmRate] = [BURST / cold.seconds, BURST / warm.seconds];
  // The benchmark's own creates bound both bursts from below: what the controller adds after the last one.
  const tail = (r: typeof cold) => r.seconds - BURST / r.createRate;
  console.log(
    `   last Session created → last admitted: cold ${tail(cold).toFixed(1)} s, live ${tail(warm).toFixed(1)} s ` +
      `(the bursts' own creates took ${(BURST / cold.createRate).toFixed(1)} ` +
      `and ${(BURST / warm.createRate).toFixed(1)} s)`,
  );
  console.log(
    `   ${warmStarts} of ${BURST} started warm, ${podsMade} Pods made; admissions/s live ÷ cold ` +
      `${(warmRate / coldRate).toFixed(2)}; writes per follow-up with its Session create ` +
      `${(total(warm.writes) / BURST).toFixed(2)}`,
  );
  return [
    atLeast(`controller: warm starts in a live burst of ${BURST}`, warmStarts, BURST),
    atLeast('controller: admissions/s live ÷ cold, same run', warmRate / coldRate, 2),
    atMost('controller: live burst Session → Starting p99', percentile(warm.latencies, 99), 1000, 'ms'),
    atMost('controller: write requests per follow-up (Session create included)', total(warm.writes) / BURST, 2),
  ];
}
