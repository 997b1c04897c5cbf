// Relay benchmark on a real local control plane and the fake Twilio Messages API:
//   1. webhook acknowledgement latency at a fixed rate (default 200 req/s for 10 s), p50/p99
//   2. webhook → Session visible in a watch, p99
//   3. Session status change → outbound send reaching the Messages API, p99
// The relay runs as its own process (relay/main.ts, configured by environment as in production);
// this process is the load generator, the fake Twilio API and an independent watcher.
// Run: npm run bench:relay [-- --rate 200 --seconds 10 --status 200]
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
import { messageSid, signedWebhook } from '../test/support/twilio-webhook.ts';

const { values: args } = parseArgs({ options: { rate: { type: 'string', default: '200' }, seconds: { type: 'string', default: '10' }, status: { type: 'string', default: '200' }, profile: { type: 'string' } } });
const rate = Number(args.rate);
const total = rate * Number(args.seconds);
const statusChanges = Number(args.status);

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};
const ms = (n: number) => `${n.toFixed(1)} ms`;
const sleep = (n: number) => new Promise((r) => setTimeout(r, n));
const phoneOf = (i: number) => `+1555${String(1_000_000 + i).slice(1)}`;

const plane = await startControlPlane({ controllerManager: false });
const fake = await startFakeTwilio();
const kc = await loadKubeConfig(plane.kubeconfig);
await installSessionCrd(kc);
const namespace = 'bench';
await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
const phones = Array.from({ length: total }, (_, i) => phoneOf(i));
const port = await freePort();
const publicUrl = 'https://tether.bench';
const relayUrl = `http://127.0.0.1:${port}`;
const relayLog = join(mkdtempSync(join(tmpdir(), 'bench-relay-')), 'relay.log');
console.error(`relay log: ${relayLog}`);
const child = spawn(process.execPath, [...(args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : []), 'relay/main.ts'], {
  stdio: ['ignore', openSync(relayLog, 'w'), 'inherit'],
  env: {
    KUBECONFIG: plane.kubeconfig, RELAY_PORT: String(port), LOG_LEVEL: 'warn',
    PUBLIC_URL: publicUrl, TETHER_NAMESPACE: namespace, TETHER_REPO_URL: 'https://github.com/acme/web.git',
    RELAY_MEDIA_SIGNING_KEY: randomBytes(32).toString('hex'), RELAY_MEDIA_DIR: mkdtempSync(join(tmpdir(), 'bench-media-')),
    ALLOWED_NUMBERS: phones.join(','), RELAY_SEND_RATE: '1000', RELAY_PROGRESS_BATCH: '1s',
    TWILIO_ACCOUNT_SID: fake.accountSid, TWILIO_AUTH_TOKEN: fake.authToken, TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886', TWILIO_API_URL: fake.url,
  },
});
for (let ready = false; !ready; await sleep(100)) ready = await fetch(`${relayUrl}/readyz`).then((r) => r.ok, () => false);
const logger = pino({ level: 'warn' });
const path = sessionsPath(namespace);

// An independent watcher sees Sessions appear.
const seen = new Map<string, number>();
const watcher = createInformer<Session>({ kube: kc, path, logger });
watcher.onChange((_key, s) => {
  if (s && !seen.has(s.spec.phone)) seen.set(s.spec.phone, performance.now());
});
await watcher.start();

// 1 + 2: distinct commands from distinct phones at a fixed rate.
const sentAt = new Map<string, number>();
const acks: number[] = [];
const requests: Promise<void>[] = [];
const start = performance.now();
for (let i = 0; i < total; i++) {
  const due = start + (i * 1000) / rate;
  const wait = due - performance.now();
  if (wait > 1) await sleep(wait);
  const phone = phones[i]!;
  const hook = signedWebhook(fake.authToken, `${publicUrl}/webhook`, { from: phone, body: `bench command ${i}`, sid: messageSid() });
  const t0 = performance.now();
  sentAt.set(phone, t0);
  requests.push(fetch(`${relayUrl}/webhook`, { method: 'POST', headers: hook.headers, body: hook.body }).then(async (res) => {
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
    acks.push(performance.now() - t0);
  }));
}
const offered = total / ((performance.now() - start) / 1000);
await Promise.all(requests);
const deadline = Date.now() + 180_000;
while (seen.size < total && Date.now() < deadline) await sleep(50);
const created = phones.filter((p) => seen.has(p)).map((p) => seen.get(p)! - sentAt.get(p)!);
await sleep(1000);

// 3: status changes → the send reaching the Messages API.
const sessions = new SessionClient(kc);
const byPhone = new Map(watcher.list().map((s) => [s.spec.phone, s]));
const changedAt = new Map<string, number>();
const outboundLatency: number[] = [];
const patchLatency: number[] = [];
fake.onMessage((m) => {
  const phone = m.to.replace('whatsapp:', '');
  const t0 = changedAt.get(phone);
  if (t0 !== undefined && m.body.startsWith('⏳')) outboundLatency.push(performance.now() - t0);
});
const targets = phones.slice(0, statusChanges);
const patchStart = performance.now();
await Promise.all(targets.map(async (phone, i) => {
  await sleep(Math.max(0, (i * 1000) / 50 - (performance.now() - patchStart)));
  const s = byPhone.get(phone)!;
  changedAt.set(phone, performance.now());
  const t0 = performance.now();
  await sessions.patchStatus(namespace, s.metadata.name!, { phase: 'Working', progress: [{ seq: 1, at: new Date().toISOString(), text: 'Reading the code' }] });
  patchLatency.push(performance.now() - t0);
}));
while (outboundLatency.length < targets.length && Date.now() < deadline + 60_000) await sleep(50);

const figures = {
  webhookAck: { requests: total, offeredRatePerSecond: Math.round(offered), p50: ms(pct(acks, 50)), p99: ms(pct(acks, 99)), max: ms(Math.max(...acks)) },
  webhookToSession: { created: created.length, p50: ms(pct(created, 50)), p99: ms(pct(created, 99)) },
  statusToOutbound: { changes: targets.length, delivered: outboundLatency.length, ratePerSecond: 50, p50: ms(pct(outboundLatency, 50)), p99: ms(pct(outboundLatency, 99)), statusPatchP50: ms(pct(patchLatency, 50)) },
};
console.log(JSON.stringify(figures, null, 2));
watcher.stop();
const exited = new Promise((r) => child.once('exit', r));
child.kill('SIGTERM');
if (!(await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]))) {
  console.error('relay did not exit within 10 s of SIGTERM; killing it');
  child.kill('SIGKILL');
}
await fake.close();
await plane.stop();
process.exit(0);
