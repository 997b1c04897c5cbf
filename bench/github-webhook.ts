// The GitHub webhook under a flood: 1,000 signed deliveries (failing checks on pull requests Tether
// opened, the same deliveries again, redeliveries under new ids, events for pull requests that are
// not Tether's) sent 32 at a time (or as many as the argument says) over kept-alive connections
// by a process of its own, to a relay app with its real journal on disk. Prints the
// acknowledgement p50/p99/max and fails if any event was acted on twice (or not at all).
// `node bench/github-webhook.ts [in flight]`.
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { text } from 'node:stream/consumers';
import { startGithubRelay } from '../test/unit/github-relay.ts';
import { MemoryRecords, payloads, pullRecord, signed, type SignedDelivery } from '../test/unit/github-fixtures.ts';
import { machineLoad } from './machine.ts';

const DELIVERIES = 1000;
/** Deliveries sent at once: `node bench/github-webhook.ts [in flight]` (default 32). */
const IN_FLIGHT = Number(process.argv[process.argv[2] === 'send' ? 3 : 2] ?? 32);
const PULLS = 20;
const DISTINCT = 200;

/** The sender (its own process): posts every delivery, IN_FLIGHT at a time; writes each ack time (ms). */
async function send(): Promise<void> {
  const { url, deliveries } = JSON.parse(await text(process.stdin)) as { url: string; deliveries: SignedDelivery[] };
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const post = (d: SignedDelivery) =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        url,
        { method: 'POST', agent, headers: { ...d.headers, 'content-length': Buffer.byteLength(d.body) } },
        (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)),
      );
      req.once('error', reject).end(d.body);
    });
  const acks: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < deliveries.length) {
      const d = deliveries[next++]!;
      const t0 = performance.now();
      const status = await post(d);
      if (status !== 202) throw new Error(`delivery answered ${status}`);
      acks.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  agent.destroy();
  process.stdout.write(JSON.stringify(acks));
}

const headOf = (i: number) => (i + 1).toString(16).padStart(40, '0');

/** The flood: DISTINCT failing checks over PULLS pull requests, each sent again and redelivered, and foreign ones. */
function flood(): SignedDelivery[] {
  const distinct = Array.from({ length: DISTINCT }, (_, i) =>
    // each on a head of its own: failures on a head already told join that notice (one message)
    signed('check_run', payloads.checkFailed({ id: 1 + i, number: 1 + (i % PULLS), sha: headOf(i) })),
  );
  const copies = distinct.map((d) => d);
  const redeliveries = distinct.map((d) => signed('check_run', JSON.parse(d.body)));
  const foreign = Array.from({ length: DELIVERIES - 3 * DISTINCT }, (_, i) =>
    signed('check_run', payloads.checkFailed({ id: 10_000 + i, number: 1000 + i })),
  );
  const all = [...distinct, ...copies, ...redeliveries, ...foreign];
  return all.map((_, i) => all[(i * 7919) % all.length]!); // interleaved (7919 is prime to 1,000)
}

const ms = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!.toFixed(2);
};

async function main(): Promise<void> {
  const records = new MemoryRecords(Array.from({ length: PULLS }, (_, i) => pullRecord({ number: 1 + i })));
  const relay = await startGithubRelay({ records, maxBacklog: 10_000 });
  const url = `${relay.base}/github/webhook`;
  const child = fork(import.meta.filename, ['send', String(IN_FLIGHT)], { stdio: ['pipe', 'pipe', 'inherit', 'ipc'] });
  child.stdin!.end(JSON.stringify({ url, deliveries: flood() }));
  const [out, code] = await Promise.all([text(child.stdout!), new Promise((r) => child.once('exit', r))]);
  if (code !== 0) throw new Error(`the sender exited with code ${String(code)}`);
  const acks = JSON.parse(out) as number[];
  await relay.close();
  const told = relay.sent.map((s) => s.parts[0]!.actions![0]!.payload);
  const once = told.length === DISTINCT && new Set(told).size === DISTINCT;
  process.stdout.write(
    `GitHub webhook: ${acks.length} deliveries, ${IN_FLIGHT} in flight (${machineLoad()})\n` +
      `  acknowledgement p50 ${ms(acks, 50)} ms · p99 ${ms(acks, 99)} ms · max ${ms(acks, 100)} ms\n` +
      `  notices sent ${told.length} for ${DISTINCT} distinct events: ${once ? 'each once' : 'NOT each once'}\n`,
  );
  if (!once) process.exitCode = 1;
}

await (process.argv[2] === 'send' ? send() : main());
