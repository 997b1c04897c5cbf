// The controller process: config, logger, metrics, the API server connection (no client-node), the
// installed CRD's schema version checked (crd-version.ts); then the replica (leader election +
// controller) and HTTP for metrics and probes, stopped on SIGTERM after releasing the Lease.
import { loadConnection } from '../common/kube/kubeconfig.ts';
import { createLogger, makeRedactor } from '../common/log.ts';
import { configOrExit, exitOnSignal } from '../common/process.ts';
import { createApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { crdVersionProblem, readInstalledCrd } from './crd-version.ts';
import { createMetrics } from './metrics.ts';
import { createReplica } from './replica.ts';

const config = configOrExit('controller', loadConfig, (error) => error instanceof ConfigError);
const logger = createLogger({
  component: 'controller',
  level: config.logLevel,
  bindings: { identity: config.identity },
  // The egress key derives every runner's proxy credential: never in a log line.
  redact: makeRedactor(config.egress ? [config.egress.key] : []),
});
const metrics = createMetrics(() => replica.controller?.sessions.list() ?? [], { timeouts: config });
const kubeConfig = await loadConnection(config.kube);
const crdProblem = crdVersionProblem(await readInstalledCrd(kubeConfig));
if (crdProblem) {
  process.stderr.write(`tether-controller: refusing to run: ${crdProblem}\n`);
  process.exit(2);
}
const replica = createReplica({
  kubeConfig,
  config,
  logger,
  metrics,
  onLostLeadership: () => {
    logger.error('lost the leader Lease; exiting so a fresh replica stands by');
    process.exit(1);
  },
});
const app = createApp({ registry: metrics.registry, ready: () => replica.ready() });
const server = app.listen(config.metricsPort, config.metricsAddress, () =>
  logger.info({ address: config.metricsAddress, port: config.metricsPort }, 'metrics and probes listening'),
);
exitOnSignal(logger, 'shutting down; releasing the Lease', async () => {
  await replica.stop();
  server.close();
});
await replica.start();
