// Entry point: config, logger, metrics, kube client, leader election, controller, HTTP.
import { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { createLeaderElector } from '../common/kube/leader-election.ts';
import { createApp } from './app.ts';
import { ConfigError, loadConfig, type ControllerConfig } from './config.ts';
import { createController, type Controller } from './controller.ts';
import { createMetrics } from './metrics.ts';

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

let controller: Controller | undefined;
let shuttingDown = false;
const metrics = createMetrics(() => controller?.sessions.list() ?? []);

async function lead(): Promise<void> {
  metrics.setLeader(true);
  controller = createController({ kubeConfig, config, logger, metrics });
  await controller.start();
}

async function follow(): Promise<void> {
  metrics.setLeader(false);
  const stopping = controller;
  controller = undefined;
  await stopping?.stop();
  if (!shuttingDown) {
    logger.error('lost the leader Lease; exiting so a fresh replica can stand by');
    process.exit(1);
  }
}

const elector = config.leaderElection
  ? createLeaderElector({
    kubeConfig, namespace: config.namespace, name: config.leaseName, identity: config.identity, logger,
    onStartedLeading: () => void lead().catch((err: unknown) => {
      logger.fatal({ err }, 'controller failed to start');
      process.exit(1);
    }),
    onStoppedLeading: () => void follow(),
  })
  : undefined;

const server = createApp({
  registry: metrics.registry,
  ready: () => (controller ? controller.synced : Boolean(elector && !elector.isLeader)),
}).listen(config.metricsPort, () => logger.info({ port: config.metricsPort }, 'metrics and probes listening'));

async function shutdown(signal: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  logger.info({ signal }, 'shutting down');
  if (elector) await elector.stop();
  await controller?.stop();
  server.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

if (elector) elector.start();
else await lead();
