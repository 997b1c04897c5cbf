// Load for the relay benchmark: signed webhooks at a fixed rate, a writer that saturates the API
// server, and the API server's own count of the write requests the relay makes.
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ControlPlane } from '../local/control-plane/control-plane.ts';
import { messageSid, signedWebhook } from '../test/support/twilio-webhook.ts';

const sleep = (n: number) => new Promise((r) => setTimeout(r, n));

export interface Burst {
  /** acknowledgement latency of each webhook, ms */
  acks: number[];
  /** webhooks answered with the busy reply (not recorded) */
  shed: number;
  recorded: number;
  /** phone → when its webhook was sent (performance.now()) */
  sentAt: Map<string, number>;
}

/** One command from each phone, at `rate` per second; resolves when every webhook is answered. */
export async function webhookBurst(options: { relayUrl: string; webhookUrl: string; authToken: string; phones: string[]; rate: number }): Promise<Burst> {
  const burst: Burst = { acks: [], shed: 0, recorded: 0, sentAt: new Map() };
  const requests: Promise<void>[] = [];
  const start = performance.now();
  for (const [i, phone] of options.phones.entries()) {
    const wait = start + (i * 1000) / options.rate - performance.now();
    if (wait > 1) await sleep(wait);
    const hook = signedWebhook(options.authToken, options.webhookUrl, { from: phone, body: `bench command ${i}`, sid: messageSid() });
    const t0 = performance.now();
    burst.sentAt.set(phone, t0);
    const post = () => fetch(`${options.relayUrl}/webhook`, { method: 'POST', headers: hook.headers, body: hook.body });
    // A kept-alive connection the server closed as it was reused: sent again, as Twilio would (same MessageSid).
    requests.push(post().catch(post).then(async (res) => {
      const body = await res.text();
      if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
      burst.acks.push(performance.now() - t0);
      if (body.includes('<Message>')) burst.shed++;
      else burst.recorded++;
    }));
  }
  await Promise.all(requests);
  return burst;
}

/** Starts bench/relay-saturate.ts (its own process); stop() resolves with the writes per second it made. */
export function saturate(kubeconfig: string, namespace: string, width: number): { stop(): Promise<number> } {
  const child = spawn(process.execPath, ['bench/relay-saturate.ts', kubeconfig, namespace, String(width)], { stdio: ['ignore', 'pipe', 'inherit'] });
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

/** Write requests the API server has served on the resources the relay writes (Sessions, ConfigMaps), by its own count. */
export async function relayWrites(plane: ControlPlane, resources = RELAY_RESOURCES): Promise<number> {
  const { stdout } = await promisify(execFile)(join(plane.binDir, 'kubectl'), ['--kubeconfig', plane.kubeconfig, 'get', '--raw', '/metrics'], { maxBuffer: 64 * 1024 * 1024 });
  let total = 0;
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (WRITE_VERBS.has(labels.verb!) && resources.has(labels.resource!)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** Upper bucket bound (ms) under which `q` of a Prometheus histogram's observations fall, from its text. */
export function histogramQuantile(metricsText: string, name: string, q: number): { count: number; atMostMs: number } {
  const buckets = [...metricsText.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\d+)`, 'gm'))].map((m) => ({ le: Number(m[1]), n: Number(m[2]) }));
  const count = buckets.at(-1)?.n ?? 0;
  const bound = buckets.find((b) => b.n >= q * count)?.le ?? NaN;
  return { count, atMostMs: Number.isNaN(bound) ? Infinity : bound * 1000 }; // le="+Inf" is no number
}
