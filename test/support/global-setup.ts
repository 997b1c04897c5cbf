// vitest global setup: one real control plane per test run, shared by every integration test.
import type { TestProject } from 'vitest/node';
import { startControlPlane, type ControlPlane } from '../../local/control-plane/control-plane.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    binDir: string;
  }
}

let plane: ControlPlane | undefined;

export async function setup(project: TestProject) {
  const started = Date.now();
  plane = await startControlPlane();
  console.log(`[control-plane] ready at ${plane.server} in ${Date.now() - started} ms (${plane.dir})`);
  project.provide('kubeconfig', plane.kubeconfig);
  project.provide('binDir', plane.binDir);
}

export async function teardown() {
  await plane?.stop();
}
