// The relay process: config, logger, metrics, kube client and the Session informer; then the relay.
import { createInformer } from '../common/kube/informer.ts';
import { loadConnection } from '../common/kube/kubeconfig.ts';
import { sessionsPath } from '../common/kube/sessions.ts';
import { createLogger, makeRedactor } from '../common/log.ts';
import { configOrExit, exitOnSignal } from '../common/process.ts';
import type { Session } from '../common/session/schema.ts';
import { ConfigError, kubeEnvironment, loadConfig } from './config.ts';
import { createMetrics } from './metrics.ts';
import { startRelay } from './server.ts';

const config = configOrExit('relay', loadConfig, (error) => error instanceof ConfigError);
const logger = createLogger({ component: 'relay', level: config.logLevel, redact: makeRedactor(config.secrets) });
const metrics = createMetrics({ defaults: true });
const kubeConfig = await loadConnection(kubeEnvironment());
const store = createInformer<Session>({
  kube: kubeConfig,
  logger: logger.child({ informer: 'sessions' }),
  path: sessionsPath(config.namespace),
  onRestart: (reason) => logger.warn({ reason }, 'session watch restarted'),
});
const relay = await startRelay({ config, kubeConfig, store, logger, metrics });
exitOnSignal(logger, 'shutting down: acting on recorded messages, draining outbound ones', () => relay.close());
