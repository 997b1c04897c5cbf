// The relay benchmark's parallel writer, in its own process so that its client work does not slow
// the load generator: `width` loops creating and deleting 8 KiB ConfigMaps in a namespace until
// SIGTERM, then one line on stdout: the writes per second it made.
// Run by bench/relay.ts: node bench/relay-saturate.ts <kubeconfig> <namespace> <width>
import { CoreV1Api } from '@kubernetes/client-node';
import { loadKubeConfig } from '../common/kube/connection.ts';

const [kubeconfig, namespace, width] = process.argv.slice(2);
const core = (await loadKubeConfig(kubeconfig)).makeApiClient(CoreV1Api);
const payload = 'x'.repeat(8192);
let running = true;
let writes = 0;
const started = performance.now();
process.once('SIGTERM', () => (running = false));
await Promise.all(
  Array.from({ length: Number(width) }, async (_, lane) => {
    for (let i = 0; running; i++) {
      const name = `load-${lane}-${i}`;
      await core
        .createNamespacedConfigMap({ namespace: namespace!, body: { metadata: { name }, data: { payload } } })
        .catch(() => undefined);
      await core.deleteNamespacedConfigMap({ namespace: namespace!, name }).catch(() => undefined);
      writes += 2;
    }
  }),
);
process.stdout.write(`${Math.round(writes / ((performance.now() - started) / 1000))}\n`);
