// Load for the relay benchmark: signed webhooks at a fixed rate, a writer that saturates the API
// server, and the API server's own count of the write requests the relay makes.
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { promisify } from 'node:util';
import type { ControlPlane } from '../local/control-plane/control-plane.ts';

export interface Burst {
  /** acknowledgement latency of each webhook, ms */
  acks: number[];
  /** webhooks answered with the busy reply (not recorded) */
  shed: number;
  recorded: number;
  /** phone → when its webhook was sent (performance.now()) */
  sentAt: Map<string, number>;
}

/**
 * One command from each phone, at `rate` per second, sent by bench/relay-webhooks.ts (its own
 * process: this one's fake Twilio API and watcher do not delay the requests it times); resolves
 * when every webhook is answered.
 */
export async function webhookBurst(options: {
  relayUrl: string;
  webhookUrl: string;
  authToken: string;
  phones: string[];
  rate: number;
}): Promise<Burst> {
  const child = spawn(process.execPath, ['--expose-gc', 'bench/relay-webhooks.ts'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const { relayUrl, webhookUrl, authToken, phones, rate } = options;
  child.stdin.end(JSON.stringify({ relayUrl, webhookUrl, authToken, phones, rate }));
  const [out, code] = await Promise.all([text(child.stdout), new Promise((resolve) => child.once('exit', resolve))]);
  if (code !== 0) throw new Error(`bench/relay-webhooks.ts exited with code ${String(code)}`);
  const result = JSON.parse(out) as Omit<Burst, 'sentAt'> & { sentAt: Array<[string, number]> };
  // Its send times are since the epoch; the callers compare them with this process's performance.now().
  return { ...result, sentAt: new Map(result.sentAt.map(([phone, at]) => [phone, at - performance.timeOrigin])) };
}

/** Starts bench/relay-saturate.ts (its own process); stop() resolves with the writes per second it made. */
export function saturate(kubeconfig: string, namespace: string, width: number): { stop(): Promise<number> } {
  const child = spawn(process.execPath, ['bench/relay-saturate.ts', kubeconfig, namespace, String(width)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    async stop() {
      child.kill('SIGTERM');
      await exited;
      return Number(out.trim()) || 0;
    },
  };
}

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY']);
const RELAY_RESOURCES = new Set(['sessions', 'configmaps']);

/**
 * Write requests the API server has served on the resources the relay writes (Sessions, ConfigMaps), by its own
 * count.
 */
export async function relayWrites(plane: ControlPlane, resources = RELAY_RESOURCES): Promise<number> {
  const { stdout } = await promisify(execFile)(
    join(plane.binDir, 'kubectl'),
    ['--kubeconfig', plane.kubeconfig, 'get', '--raw', '/metrics'],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  let total = 0;
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (WRITE_VERBS.has(labels.verb!) && resources.has(labels.resource!))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** Upper bucket bound (ms) under which `q` of a Prometheus histogram's observations fall, from its text. */
export function histogramQuantile(metricsText: string, name: string, q: number): { count: number; atMostMs: number } {
  const buckets = [...metricsText.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\d+)`, 'gm'))].map((m) => ({
    le: Number(m[1]),
    n: Number(m[2]),
  }));
  const count = buckets.at(-1)?.n ?? 0;
  const bound = buckets.find((b) => b.n >= q * count)?.le ?? NaN;
  return { count, atMostMs: Number.isNaN(bound) ? Infinity : bound * 1000 }; // le="+Inf" is no number
}
