// Entry point: config, logger, metrics, kube client, the replica (leader election +
// controller), HTTP for metrics and probes, graceful shutdown on SIGTERM.
import { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { createApp } from './app.ts';
import { ConfigError, loadConfig, type ControllerConfig } from './config.ts';
import { createMetrics } from './metrics.ts';
import { createReplica, type Replica } from './replica.ts';

function configOrExit(): ControllerConfig {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`tether-controller: configuration error: ${error.message}\n`);
    process.exit(2);
  }
}

const config = configOrExit();
const logger = pino({
  level: config.logLevel,
  base: { component: 'controller', identity: config.identity },
  redact: { paths: ['*.token', '*.authorization', '*.Authorization', '*.password', 'spec.phone', '*.spec.phone'], censor: '[redacted]' },
});
const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();

const holder: { replica?: Replica } = {};
const metrics = createMetrics(() => holder.replica?.controller?.sessions.list() ?? []);
const replica = createReplica({
  kubeConfig, config, logger, metrics,
  onLostLeadership: () => {
    logger.error('lost the leader Lease; exiting so a fresh replica stands by');
    process.exit(1);
  },
});

holder.replica = replica;

const server = createApp({ registry: metrics.registry, ready: () => replica.ready() })
  .listen(config.metricsPort, () => logger.info({ port: config.metricsPort }, 'metrics and probes listening'));

let shuttingDown = false;
async function shutdown(signal: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  logger.info({ signal }, 'shutting down; releasing the Lease');
  await replica.stop();
  server.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

await replica.start();
