// vitest global setup: one real control plane per test run, shared by every integration test. It is
// laid out as `make dev` lays out its own: in `cluster/` of a state folder that the stack's
// containers may pass through (0711), so a test sees what an agent process could reach there.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startControlPlane, type ControlPlane } from '../../local/control-plane/control-plane.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    binDir: string;
    /** The control plane's folder: certificates, kubeconfigs, plane.json, etcd's data, logs. */
    controlPlaneDir: string;
  }
}

let plane: ControlPlane | undefined;
let stateDir: string | undefined;

export async function setup(project: TestProject) {
  const started = Date.now();
  stateDir = mkdtempSync(join(tmpdir(), 'tether-run-'));
  chmodSync(stateDir, 0o711);
  plane = await startControlPlane({ dir: join(stateDir, 'cluster') });
  console.log(`[control-plane] ready at ${plane.server} in ${Date.now() - started} ms (${plane.dir})`);
  project.provide('kubeconfig', plane.kubeconfig);
  project.provide('binDir', plane.binDir);
  project.provide('controlPlaneDir', plane.dir);
}

export async function teardown() {
  await plane?.stop();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
}
