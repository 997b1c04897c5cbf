// Relay benchmark on a real local control plane and the fake Twilio Messages API. Prints, each
// with its target:
//   1. webhook acknowledgement p50/p99 at 200/s for 10 s, the API server idle;
//   2. the same while a parallel writer saturates the API server (and how many webhooks were shed);
//   3. webhook → Session visible in a watch, p50/p99 at 50/s; write requests per command, counted
//      from the API server's own apiserver_request_total before and after;
//   4. Session status change → outbound send reaching the Messages API, p50/p99 at 50 changes/s.
// The relay runs as its own process (relay/main.ts, configured by environment as in production);
// this process is the load generator, the fake Twilio API and an independent watcher.
// Run: npm run bench:relay [-- --rate 200 --seconds 10 --create-rate 50 --status-rate 50]
import { connectionFromKubeConfig } from '../common/kube/connection.ts';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createInformer } from '../common/kube/informer.ts';
import { SessionClient, sessionsPath } from '../common/kube/sessions.ts';
import type { Session } from '../common/session/schema.ts';
import { loadKubeConfig } from '../common/kube/connection.ts';
import { freePort, startControlPlane } from '../local/control-plane/control-plane.ts';
import { installSessionCrd } from '../local/control-plane/crd.ts';
import { startFakeTwilio } from '../test/fakes/twilio.ts';
import { BENCH_ROWS_FILE } from './config.ts';
import { machineLoad, percentile, refuseIfBusy } from './machine.ts';
import { atMost, report } from './report.ts';
import { histogramQuantile, relayWrites, saturate, webhookBurst } from './relay-load.ts';

refuseIfBusy();
const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '10' },
    'create-rate': { type: 'string', default: '50' },
    'status-rate': { type: 'string', default: '50' },
    profile: { type: 'string' },
  },
});
const rate = Number(args.rate);
const seconds = Number(args.seconds);
const createRate = Number(args['create-rate']);
const statusRate = Number(args['status-rate']);
const TARGETS = { ackP99: 25, sessionP99: 150, writesPerCommand: 1, outboundP99: 250 };
const sleep = (n: number) => new Promise((r) => setTimeout(r, n));
const loadBefore = machineLoad();

const plane = await startControlPlane({ controllerManager: false });
const fake = await startFakeTwilio();
const kc = await loadKubeConfig(plane.kubeconfig);
await installSessionCrd(kc);
const namespace = 'bench';
const core = kc.makeApiClient(CoreV1Api);
await core.createNamespace({ body: { metadata: { name: namespace } } });
await core.createNamespace({ body: { metadata: { name: 'load' } } });
const phones = Array.from(
  { length: 2 * rate * seconds + createRate * seconds },
  (_, i) => `+1555${String(1_000_000 + i).slice(1)}`,
);
const port = await freePort();
const publicUrl = 'https://tether.bench';
const relayUrl = `http://127.0.0.1:${port}`;
const scratch = mkdtempSync(join(tmpdir(), 'bench-relay-'));
console.error(`relay log: ${join(scratch, 'relay.log')}`);
const child = spawn(
  process.execPath,
  [...(args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : []), 'relay/main.ts'],
  {
    stdio: ['ignore', openSync(join(scratch, 'relay.log'), 'w'), 'inherit'],
    env: {
      KUBECONFIG: plane.kubeconfig,
      RELAY_PORT: String(port),
      TETHER_LOG_LEVEL: 'warn',
      PUBLIC_URL: publicUrl,
      TETHER_NAMESPACE: namespace,
      TETHER_REPO_URL: 'https://github.com/acme/web.git',
      RELAY_MEDIA_SIGNING_KEY: randomBytes(32).toString('hex'),
      TETHER_PHONE_HASH_KEY: randomBytes(32).toString('hex'),
      RELAY_MEDIA_DIR: join(scratch, 'media'),
      RELAY_JOURNAL_DIR: join(scratch, 'journal'),
      ALLOWED_NUMBERS: phones.join(','),
      RELAY_SEND_RATE: '1000',
      RELAY_PROGRESS_BATCH: '1s',
      TWILIO_ACCOUNT_SID: fake.accountSid,
      TWILIO_AUTH_TOKEN: fake.authToken,
      TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886',
      TWILIO_API_URL: fake.url,
    },
  },
);
for (let ready = false; !ready; await sleep(100)) {
  if (child.exitCode !== null)
    throw new Error(`the relay exited with code ${child.exitCode}; see ${join(scratch, 'relay.log')}`);
  ready = await fetch(`${relayUrl}/readyz`).then(
    (r) => r.ok,
    () => false,
  );
}

// An independent watcher sees Sessions appear.
const seen = new Map<string, number>();
const watcher = createInformer<Session>({
  kube: connectionFromKubeConfig(kc),
  path: sessionsPath(namespace),
  logger: pino({ level: 'warn' }),
});
watcher.onChange((_key, s) => {
  if (s && !seen.has(s.spec.phone)) seen.set(s.spec.phone, performance.now());
});
await watcher.start();
const drain = async (expected: number) => {
  for (const deadline = Date.now() + 300_000; seen.size < expected && Date.now() < deadline;) await sleep(50);
};
const burstOptions = { relayUrl, webhookUrl: `${publicUrl}/webhook`, authToken: fake.authToken };

// 1: acknowledgements, API server idle.
const idle = await webhookBurst({ ...burstOptions, phones: phones.slice(0, rate * seconds), rate });
await drain(idle.recorded);

// 2: acknowledgements while a parallel writer saturates the API server.
const writer = saturate(plane.kubeconfig, 'load', 64);
await sleep(2000);
const busy = await webhookBurst({ ...burstOptions, phones: phones.slice(rate * seconds, 2 * rate * seconds), rate });
const writerRate = await writer.stop();
await drain(idle.recorded + busy.recorded);

// 3: webhook → Session at 50/s, and write requests per command.
await sleep(1000);
const writesBefore = await relayWrites(plane);
const createPhones = phones.slice(2 * rate * seconds);
const created = await webhookBurst({ ...burstOptions, phones: createPhones, rate: createRate });
await drain(idle.recorded + busy.recorded + created.recorded);
await sleep(1000);
const writesPerCommand = ((await relayWrites(plane)) - writesBefore) / created.recorded;
const toSession = createPhones
  .filter((p) => seen.has(p) && created.sentAt.has(p))
  .map((p) => seen.get(p)! - created.sentAt.get(p)!);

// 4: status changes → the send reaching the Messages API.
const sessions = new SessionClient(connectionFromKubeConfig(kc));
const byPhone = new Map(watcher.list().map((s) => [s.spec.phone, s]));
const changedAt = new Map<string, number>();
const outbound: number[] = [];
fake.onMessage((m) => {
  const t0 = changedAt.get(m.to.replace('whatsapp:', ''));
  if (t0 !== undefined && m.body.startsWith('⏳')) outbound.push(performance.now() - t0);
});
const targets = createPhones.filter((p) => byPhone.has(p));
const patchStart = performance.now();
await Promise.all(
  targets.map(async (phone, i) => {
    await sleep(Math.max(0, (i * 1000) / statusRate - (performance.now() - patchStart)));
    changedAt.set(phone, performance.now());
    await sessions.patchStatus(namespace, byPhone.get(phone)!.metadata.name!, {
      phase: 'Working',
      progress: [{ seq: 1, at: new Date().toISOString(), text: 'Reading the code' }],
    });
  }),
);
for (const deadline = Date.now() + 60_000; outbound.length < targets.length && Date.now() < deadline;) await sleep(50);

const row = (figure: string, target: string, measured: string, met: boolean) => ({
  figure,
  target,
  measured,
  met: met ? 'yes' : 'NO',
});
const p = (values: number[], q: number) => percentile(values, q);
console.table([
  row(
    `ack p50 / p99 at ${rate}/s, API server idle`,
    `p99 ≤ ${TARGETS.ackP99} ms`,
    `${p(idle.acks, 50)} / ${p(idle.acks, 99)} ms (${idle.shed} shed)`,
    p(idle.acks, 99) <= TARGETS.ackP99,
  ),
  row(
    `ack p50 / p99 at ${rate}/s, API server saturated (${writerRate} writes/s beside)`,
    `p99 ≤ ${TARGETS.ackP99} ms`,
    `${p(busy.acks, 50)} / ${p(busy.acks, 99)} ms (${busy.shed} shed)`,
    p(busy.acks, 99) <= TARGETS.ackP99,
  ),
  row(
    `webhook → Session p50 / p99 at ${createRate}/s`,
    `p99 ≤ ${TARGETS.sessionP99} ms`,
    `${p(toSession, 50)} / ${p(toSession, 99)} ms (${toSession.length} of ${created.recorded})`,
    p(toSession, 99) <= TARGETS.sessionP99 && toSession.length === created.recorded,
  ),
  row(
    'write requests per new command (apiserver_request_total)',
    `${TARGETS.writesPerCommand}`,
    writesPerCommand.toFixed(2),
    writesPerCommand <= TARGETS.writesPerCommand + 0.01,
  ),
  row(
    `status → outbound p50 / p99 at ${statusRate} changes/s`,
    `p99 ≤ ${TARGETS.outboundP99} ms`,
    `${p(outbound, 50)} / ${p(outbound, 99)} ms (${outbound.length} of ${targets.length})`,
    p(outbound, 99) <= TARGETS.outboundP99 && outbound.length === targets.length,
  ),
]);
// For `make bench`'s table (run alone, the table above says it all).
if (BENCH_ROWS_FILE) {
  report([
    atMost(`relay: webhook ack p99 at ${rate}/s, API server idle`, p(idle.acks, 99), TARGETS.ackP99, 'ms'),
    atMost(`relay: webhook ack p99 at ${rate}/s, API server saturated`, p(busy.acks, 99), TARGETS.ackP99, 'ms'),
    atMost(`relay: webhook → Session p99 at ${createRate}/s`, p(toSession, 99), TARGETS.sessionP99, 'ms'),
    atMost('relay: write requests per new command', writesPerCommand, TARGETS.writesPerCommand),
    atMost(`relay: status → outbound p99 at ${statusRate}/s`, p(outbound, 99), TARGETS.outboundP99, 'ms'),
  ]);
}
// The journal's fdatasync, from the relay's own histogram: it follows the acknowledgement, so its tail is no longer
// the acknowledgement's.
const relayMetrics = await (await fetch(`${relayUrl}/metrics`)).text();
const quantiles = (name: string) => [0.5, 0.99].map((q) => histogramQuantile(relayMetrics, name, q));
const [sync50, sync99] = quantiles('tether_relay_journal_sync_seconds');
const [ack50, ack99] = quantiles('tether_relay_webhook_duration_seconds');
console.log(
  `journal fdatasync (after the acknowledgement): ${sync50!.count} syncs, ` +
    `p50 ≤ ${sync50!.atMostMs} ms, p99 ≤ ${sync99!.atMostMs} ms`,
);
// The relay's own time per webhook (all runs): far below the client's figures means the load generator, not the
// relay, waited.
console.log(
  `acknowledgement inside the relay: ${ack50!.count} webhooks, ` +
    `p50 ≤ ${ack50!.atMostMs} ms, p99 ≤ ${ack99!.atMostMs} ms`,
);
console.log(`machine load (1/5/15 min): before ${loadBefore}; after ${machineLoad()}`);
watcher.stop();
const exited = new Promise((r) => child.once('exit', r));
child.kill('SIGTERM');
if (!(await Promise.race([exited.then(() => true), sleep(20_000).then(() => false)]))) {
  console.error('relay did not exit within 20 s of SIGTERM; killing it');
  child.kill('SIGKILL');
}
await fake.close();
await plane.stop();
process.exit(0);
