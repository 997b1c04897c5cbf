// The relay process: configuration, logger, metrics, kube client, informer; then the relay.
import { createInformer } from '../common/kube/informer.ts';
import { loadSharedKubeConfig } from '../common/kube/shared-connections.ts';
import { GROUP, PLURAL, VERSION, type Session } from '../common/session/schema.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { createMetrics } from './metrics.ts';
import { startRelay } from './server.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`relay: configuration error: ${error.message}`);
    process.exit(2);
  }
  const logger = createLogger(config.logLevel);
  const metrics = createMetrics({ defaults: true });
  const kubeConfig = loadSharedKubeConfig();
  const store = createInformer<Session>({
    kubeConfig, logger: logger.child({ informer: 'sessions' }),
    path: `/apis/${GROUP}/${VERSION}/namespaces/${config.namespace}/${PLURAL}`,
    onRestart: (reason) => logger.warn({ reason }, 'session watch restarted'),
  });
  const relay = await startRelay({ config, kubeConfig, store, logger, metrics });
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down: draining outbound messages');
    relay.close().then(() => process.exit(0), (error: unknown) => {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

await main();
