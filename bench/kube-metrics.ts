// What the controller benchmark reads from outside the controller: the API server's own request
// counters, a process's CPU time, and the controller process started as its image starts it.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { freePort } from '../local/control-plane/control-plane.ts';

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY']);

/** GET `path` from the API server as the admin (the kubeconfig's client certificate). */
async function apiserverGet(kc: KubeConfig, path: string): Promise<Buffer> {
  const options = {};
  await kc.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    get(new URL(`${kc.getCurrentCluster()!.server}${path}`), options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`GET ${path}: ${res.statusCode}`)),
      );
    }).on('error', reject);
  });
}

/** The API server's Prometheus text (GET /metrics as the admin). */
export const apiserverMetrics = async (kc: KubeConfig): Promise<string> =>
  (await apiserverGet(kc, '/metrics')).toString('utf8');

/** A Go CPU profile of the API server over the next `seconds` (read it with `go tool pprof -top`). */
export const apiserverProfile = (kc: KubeConfig, seconds: number): Promise<Buffer> =>
  apiserverGet(kc, `/debug/pprof/profile?seconds=${seconds}`);

/**
 * Write requests so far by "VERB resource[/subresource]", from apiserver_request_total; with `code`,
 * only those answered with it (409: a conflict, or a create of something that exists).
 */
export async function writeRequests(kc: KubeConfig, code?: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const line of (await apiserverMetrics(kc)).split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    if (!WRITE_VERBS.has(labels.verb ?? '') || (code !== undefined && labels.code !== code)) continue;
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

/** after − before, per key, without the zeros. */
export function difference(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  return new Map(
    [...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)] as [string, number]).filter(([, v]) => v > 0),
  );
}

export const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);

/** User + system CPU time of a process, in milliseconds. */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/**
 * The node flags of the controller image's CMD (controller/Dockerfile), so the benchmark runs the controller as
 * deployed.
 */
export function imageNodeFlags(): string[] {
  const cmd = /^CMD (\[.*\])$/m.exec(readFileSync('controller/Dockerfile', 'utf8'))?.[1];
  return (JSON.parse(cmd ?? '[]') as string[]).filter((a) => a.startsWith('--'));
}

export interface ControllerProcess {
  child: ChildProcess;
  metric(name: string): Promise<number>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `profileDir`: write a V8 CPU profile of the controller there when it exits. */
export async function startControllerProcess(
  kubeconfig: string,
  env: Record<string, string>,
  profileDir?: string,
): Promise<ControllerProcess> {
  const port = await freePort();
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const child = spawn(process.execPath, [...imageNodeFlags(), ...profile, 'controller/main.ts'], {
    env: {
      KUBECONFIG: kubeconfig,
      TETHER_METRICS_PORT: String(port),
      TETHER_LEADER_ELECTION: 'false',
      TETHER_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const metrics = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  for (
    const deadline = Date.now() + 60_000;
    (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status !== 200;
    await sleep(50)
  ) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('the controller did not become ready');
  }
  return {
    child,
    async metric(name) {
      let sum = 0;
      for (const line of (await metrics()).split('\n')) {
        const [series, value] = line.split(' ');
        if (!line.startsWith('#') && series?.split('{')[0] === name) sum += Number(value);
      }
      return sum;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
