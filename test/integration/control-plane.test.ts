// The harness itself: a control plane started by a process that is killed leaves no orphans.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, inject, it } from 'vitest';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

describe('local control plane harness', () => {
  it.each(['SIGKILL', 'SIGTERM'] as const)(
    'leaves no etcd or kube-apiserver behind when its starter gets %s',
    async (signal) => {
      const child = spawn(process.execPath, ['local/control-plane/cli.ts', '--no-controller-manager'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`cli exited early (${code})`)));
      });
      const { pids, server } = JSON.parse(line) as { pids: number[]; server: string };
      expect(server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(pids).toHaveLength(2);
      expect(pids.every(alive)).toBe(true);

      child.kill(signal);
      expect(await waitFor(() => pids.every((pid) => !alive(pid)), 15_000)).toBe(true);
    },
  );
});

describe('control-plane build script', () => {
  const script = 'local/control-plane/build-control-plane.sh';
  const runScript = (env: NodeJS.ProcessEnv) =>
    spawnSync('bash', [script], { env: { ...process.env, ...env }, encoding: 'utf8' });

  it('uses KUBEBUILDER_ASSETS when it holds kube-apiserver and etcd', () => {
    const assets = inject('binDir');
    const result = runScript({ KUBEBUILDER_ASSETS: assets });
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toBe(assets);
  });

  it('says what to install when Go is missing and nothing is cached', () => {
    const empty = mkdtempSync(join(tmpdir(), 'tether-nocache-'));
    const result = runScript({ TETHER_CACHE_DIR: empty, KUBEBUILDER_ASSETS: '', PATH: '/usr/bin:/bin' });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/Go is needed.*\n.*Install Go/);
  });
});
