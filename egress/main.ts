// The egress proxy process: config, logger (the install key redacted), metrics, the API server
// connection; then the proxy (server.ts), stopped on SIGTERM.
import { loadConnection } from '../common/kube/kubeconfig.ts';
import { createLogger, makeRedactor } from '../common/log.ts';
import { configOrExit, exitOnSignal } from '../common/process.ts';
import { ConfigError, kubeEnvironment, loadConfig } from './config.ts';
import { createMetrics } from './metrics.ts';
import { startEgress } from './server.ts';

const config = configOrExit('egress', loadConfig, (error) => error instanceof ConfigError);
const logger = createLogger({ component: 'egress', level: config.logLevel, redact: makeRedactor([config.key]) });
const metrics = createMetrics({ defaults: true });
const kube = await loadConnection(kubeEnvironment());
const egress = await startEgress({ config, kube, logger, metrics });
exitOnSignal(logger, 'shutting down', () => egress.close());
