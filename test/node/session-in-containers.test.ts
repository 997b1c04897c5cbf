// One Session in containers: the chart installed with helm onto the kubelet node tier, the
// relay, controller, egress proxy and runner all running from the images `make images` builds; a
// signed webhook followed to a pull request, the runner's traffic through the egress proxy; a
// runner Pod evicted mid-run and replaced, the run ending well;
// a runner Pod deleted twice and the user told.
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { DENIED_HOST, installChart, loadImages, type ChartOnNode } from '../support/chart-on-node.ts';

const [FIRST, SECOND, THIRD] = ['+14155550181', '+14155550182', '+14155550183'];
let chart: ChartOnNode;

beforeAll(async () => {
  const started = Date.now();
  await loadImages();
  const loaded = Date.now();
  chart = await installChart([FIRST, SECOND, THIRD]);
  console.log(
    `[kubelet-node] images loaded into containerd in ${loaded - started} ms, chart installed and Ready in ` +
      `${Date.now() - loaded} ms`,
  );
}, 600_000);
afterAll(async () => chart?.stop());

const latest = async (phone: string) =>
  (await chart.sessions())
    .filter((s) => s.spec.phone === phone)
    .sort((a, b) => (a.metadata!.creationTimestamp! < b.metadata!.creationTimestamp! ? -1 : 1))
    .at(-1)!;

describe('the chart on a real node', () => {
  it(`takes a WhatsApp message to a pull request, with relay, controller, runner and egress proxy in containers: \
the supervisor's fetch and push go through the proxy, and so does the agent`, async () => {
    const phone = chart.phone(FIRST);
    // git reads http_proxy: the agent's command reaches the proxy, which refuses the denied host.
    const probe = JSON.stringify({ command: `git ls-remote http://${DENIED_HOST}/x.git > probe.txt 2>&1; true` });
    await phone.send(
      `script:\nprogress: editing in a container\ntool: Bash ${probe}\nwrite: CONTAINERS.md = ran on a real node\n` +
        'say: all done',
    );
    await phone.next(/editing in a container/, 240_000);
    await phone.next(/🔐/, 120_000);
    await phone.send('allow');
    await phone.next(/Reply \*approve\*/, 120_000);
    await phone.send('approve');
    await phone.next(/Pull request opened/, 120_000);
    expect(chart.github.pulls).toHaveLength(1);
    expect(chart.github.pulls[0]).toMatchObject({ owner: 'acme', repo: 'sample', base: 'main' });
    expect(chart.forge.requests.some((r) => r.method === 'POST' && r.path.endsWith('/git-receive-pack'))).toBe(true);
    const session = await latest(FIRST);
    expect(session.status?.phase).toBe('Succeeded');
    const pod = await chart.kc
      .makeApiClient(CoreV1Api)
      .readNamespacedPod({ name: session.status!.podName!, namespace: chart.runnerNamespace });
    expect(pod.spec!.hostNetwork).toBe(true);
    expect(pod.spec!.nodeName).toBeTruthy();
    const runnerEnv = pod.spec!.containers.find((c) => c.name === 'runner')!.env!;
    expect(runnerEnv).toContainEqual({ name: 'TETHER_EGRESS_URL', value: `http://127.0.0.1:${chart.egressPort}` });
    // The supervisor's fetch and push, and the agent's refused command, as the proxy reported them.
    const forgePort = Number(new URL(chart.forge.origin).port);
    const records = session.status?.egress ?? [];
    const forge = records.find((r) => r.caller === 'supervisor' && r.host === '127.0.0.1' && r.port === forgePort);
    expect(forge?.allowed).toBeGreaterThanOrEqual(2);
    const denied = records.find((r) => r.caller === 'agent' && r.host === DENIED_HOST && r.port === 80);
    expect(denied).toMatchObject({ allowed: 0, reason: expect.stringContaining('denied by this install') });
    expect(denied?.refused).toBeGreaterThanOrEqual(1);
    const metrics = await (await fetch(`http://127.0.0.1:${chart.egressPort}/metrics`)).text();
    const count = (caller: string, decision: string) =>
      Number(
        new RegExp(`^tether_egress_connections_total\\{caller="${caller}",decision="${decision}"\\} (\\d+)`, 'm').exec(
          metrics,
        )?.[1] ?? 0,
      );
    expect(count('supervisor', 'allowed')).toBeGreaterThanOrEqual(2);
    expect(count('agent', 'refused')).toBeGreaterThanOrEqual(1);
  });

  it(`a runner Pod evicted mid-run is replaced on the same workspace: the user told once, the run ends \
well`, async () => {
    const phone = chart.phone(SECOND);
    await phone.send('script:\nprogress: working hard\nsleep: 8000\nwrite: EVICTED.md = survived\nsay: done');
    await phone.next(/working hard/, 240_000);
    const session = await latest(SECOND);
    const name = session.status!.podName!;
    await core().createNamespacedPodEviction({
      name,
      namespace: chart.runnerNamespace,
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: chart.runnerNamespace } },
    });
    await phone.next(RESTARTED, 240_000);
    await phone.next(/Reply \*approve\*/, 240_000);
    await phone.send('approve');
    await phone.next(/Pull request opened/, 120_000);
    const done = await latest(SECOND);
    expect(done.status).toMatchObject({ phase: 'Succeeded', runnerRestarts: 1, podName: `${name}-1` });
    expect(phone.received().filter((m) => RESTARTED.test(m.body))).toHaveLength(1);
  });

  it('tells the user when the runner Pod is deleted mid-run a second time', async () => {
    const phone = chart.phone(THIRD);
    await phone.send('script:\nprogress: working hard\nsleep: 120000\nsay: never');
    await phone.next(/working hard/, 240_000);
    const deletePod = async () => {
      const session = await latest(THIRD);
      await core().deleteNamespacedPod({
        name: session.status!.podName!,
        namespace: chart.runnerNamespace,
        gracePeriodSeconds: 0,
      });
    };
    await deletePod();
    await phone.next(RESTARTED, 240_000);
    await deletePod();
    const told = await phone.next(/❌/, 120_000);
    expect(told.body).toMatch(/stopped|crashed|lost|error|deleted/i);
    await eventually(async () => expect((await latest(THIRD)).status?.phase).toBe('Failed'), 60_000, 500);
  });
});

const RESTARTED = /The runner restarted; continuing where it stopped/;
const core = () => chart.kc.makeApiClient(CoreV1Api);
