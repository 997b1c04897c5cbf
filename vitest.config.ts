import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          // Two cores run two files at once, each with its own stack: a slow machine, not a hang.
          testTimeout: 120_000,
          hookTimeout: 180_000,
          pool: 'forks',
        },
      },
      {
        // The built images in a container engine, and a real kubelet, containerd and kube-scheduler
        // (local/kubelet-node) running them: `make test-node` builds the images first; not in `npm test`.
        test: {
          name: 'node',
          include: ['test/node/**/*.test.ts'],
          globalSetup: ['test/support/node-global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          pool: 'forks',
          fileParallelism: false,
        },
      },
    ],
  },
});
