// Egress proxy benchmark on a real local control plane: the proxy as its own process (egress/main.ts,
// configured by environment as in production) with one live Session, a loopback destination.
//   1. the proxy's resident memory at start and with 100 concurrent open tunnels (each carrying a request);
//   2. the proxy's added latency per request: the same small GET through the proxy as plain HTTP and
//      through a CONNECT tunnel, each on a fresh connection, against the same client going direct
//      (p50/p99 of each, the difference per percentile); then its memory after those requests.
// Run: node bench/egress.ts [-- --requests 2000 --connections 100]
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { agentPassword, supervisorPassword } from '../common/egress/credentials.ts';
import { connectionFromKubeConfig, loadKubeConfig } from '../common/kube/connection.ts';
import { SessionClient } from '../common/kube/sessions.ts';
import { DEFAULT_BLOCKED_CIDRS } from '../egress/cidrs.ts';
import { freePort, startControlPlane } from '../local/control-plane/control-plane.ts';
import { installSessionCrd } from '../local/control-plane/crd.ts';
import { hostEnv } from '../local/config.ts';
import { startManaged, untilHttpOk } from '../local/control-plane/processes.ts';
import { openTunnel, residentMiB, samples, smallServer, timedGet, timedRawGet, timedTunnelGet } from './egress-load.ts';
import { machineLoad, percentile, refuseIfBusy } from './machine.ts';
import { atMost, measuredOnly, report, type Row } from './report.ts';

refuseIfBusy();
const { values: args } = parseArgs({
  options: { requests: { type: 'string', default: '2000' }, connections: { type: 'string', default: '100' } },
});
const requests = Number(args.requests);
const connections = Number(args.connections);
const TARGETS = { addedP50Ms: 1, addedP99Ms: 5, residentMiB: 160 };
const loadBefore = machineLoad();

const plane = await startControlPlane({ controllerManager: false });
const kc = await loadKubeConfig(plane.kubeconfig);
await installSessionCrd(kc);
const namespace = 'bench-egress';
const core = kc.makeApiClient(CoreV1Api);
await core.createNamespace({ body: { metadata: { name: namespace } } });
// The Session's runner Pod (no node runs it: Pending is alive enough for the proxy). Without a
// controller manager nobody makes the namespace's default ServiceAccount, which a Pod needs.
await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'default' } } });
const pod = await core.createNamespacedPod({
  namespace,
  body: { metadata: { name: 'bench-pod' }, spec: { containers: [{ name: 'runner', image: 'runner' }] } },
});
const sessions = new SessionClient(connectionFromKubeConfig(kc));
const session = 'bench-session';
await sessions.create(namespace, session, {
  phone: '+14155550100',
  prompt: 'bench',
  repo: { url: 'https://github.com/acme/web.git' },
  workspace: 'bench-workspace',
});
await sessions.patchStatus(namespace, session, { phase: 'Working', podName: 'bench-pod' });

const key = randomBytes(32).toString('hex');
const password = agentPassword(supervisorPassword(key, namespace, 'bench-pod', pod.metadata!.uid!), session);
const auth = `Basic ${Buffer.from(`agent.${session}:${password}`).toString('base64')}`;
const dest = await smallServer();
const target = `127.0.0.1:${dest.port}`;
const proxyPort = await freePort();
const scratch = mkdtempSync(join(tmpdir(), 'bench-egress-'));
console.error(`egress log: ${join(scratch, 'egress.log')}`);
const proxy = startManaged('egress', process.execPath, ['egress/main.ts'], join(scratch, 'egress.log'), {
  env: {
    ...hostEnv(),
    KUBECONFIG: plane.kubeconfig,
    TETHER_NAMESPACE: namespace,
    TETHER_EGRESS_KEY: key,
    TETHER_EGRESS_PORT: String(proxyPort),
    TETHER_EGRESS_LISTEN: '127.0.0.1',
    TETHER_EGRESS_ALLOW: target,
    TETHER_EGRESS_BLOCKED_CIDRS: DEFAULT_BLOCKED_CIDRS.filter((c) => c !== '127.0.0.0/8').join(','),
    // The benchmark's tunnels are one Session's: above the per-Session cap of an install.
    TETHER_EGRESS_MAX_SESSION_CONNECTIONS: String(connections + 1),
    TETHER_LOG_LEVEL: 'warn',
  },
});
await untilHttpOk(`http://127.0.0.1:${proxyPort}/healthz`, proxy, 60_000, 50);
// The informers must have the Session's status and its Pod before the first request counts.
for (;;) {
  const first = await openTunnel(proxyPort, target, auth).then(
    (s) => (s.destroy(), true),
    () => false,
  );
  if (first) break;
  await new Promise((r) => setTimeout(r, 50));
}

const rows: Row[] = [];
const atStart = await residentMiB(proxy.child.pid!);
async function heapUsedMiB(): Promise<number> {
  const metrics = await (await fetch(`http://127.0.0.1:${proxyPort}/metrics`)).text();
  const bytes = Number(/^nodejs_heap_size_used_bytes ([0-9.e+]+)/m.exec(metrics)?.[1] ?? NaN);
  return Math.round((bytes / 1048576) * 10) / 10;
}

const open = await Promise.all(Array.from({ length: connections }, () => openTunnel(proxyPort, target, auth)));
for (const socket of open) socket.write('HOLD / HTTP/1.1\r\n\r\n');
await new Promise((r) => setTimeout(r, 1000));
const busy = await residentMiB(proxy.child.pid!);
const metrics = await (await fetch(`http://127.0.0.1:${proxyPort}/metrics`)).text();
const openGauge = Number(/^tether_egress_open_connections ([0-9]+)/m.exec(metrics)?.[1] ?? NaN);
console.log(`resident ${atStart} MiB at start, ${busy} MiB with ${connections} open tunnels (gauge: ${openGauge})`);
rows.push(measuredOnly('egress: resident memory, started (one Session known)', atStart, 'MiB'));
rows.push(atMost(`egress: resident memory, ${connections} open tunnels`, busy, TARGETS.residentMiB, 'MiB'));
for (const socket of open) socket.destroy();

const warm = Math.min(200, requests / 10);
// Each proxied path is compared with the same client going straight to the destination.
const direct = await samples(requests, warm, () => timedGet({ port: dest.port, path: '/' }));
const plain = await samples(requests, warm, () =>
  timedGet({ port: proxyPort, path: `http://${target}/`, headers: { 'Proxy-Authorization': auth } }),
);
const directRaw = await samples(requests, warm, () => timedRawGet(dest.port));
const tunnel = await samples(requests, warm, () => timedTunnelGet(proxyPort, target, auth));
const ms = (us: number) => Math.round(us / 10) / 100;
const p = (values: number[], q: number) => ms(percentile(values, q));
const pair = (values: number[]) => `${p(values, 50)}/${p(values, 99)} ms`;
console.log(
  `p50/p99 (${requests} requests each): node:http client direct ${pair(direct)}, through the proxy ${pair(plain)}; ` +
    `raw socket direct ${pair(directRaw)}, through a CONNECT tunnel ${pair(tunnel)}`,
);
for (const [name, values, reference] of [
  ['plain HTTP', plain, direct],
  ['CONNECT', tunnel, directRaw],
] as const) {
  const added = (q: number) => Math.max(0, Math.round((p(values, q) - p(reference, q)) * 100) / 100);
  rows.push(atMost(`egress: added latency per request, ${name}, p50`, added(50), TARGETS.addedP50Ms, 'ms'));
  rows.push(atMost(`egress: added latency per request, ${name}, p99`, added(99), TARGETS.addedP99Ms, 'ms'));
}

const after = await residentMiB(proxy.child.pid!);
console.log(`after the latency runs: resident ${after} MiB, heap used ${await heapUsedMiB()} MiB`);
rows.push(measuredOnly(`egress: resident memory after the latency runs (${2 * requests} proxied)`, after, 'MiB'));

console.log(`load before: ${loadBefore}; after: ${machineLoad()}`);
report(rows);
await proxy.stop();
dest.server.close();
await plane.stop();
