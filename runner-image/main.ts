// The runner Pod's entrypoint: node /app/runner-image/main.ts. Config, logger, API connection, then
// the Session's run; exits 0 once a final phase is written or found (a live runner: once stopped while
// idle between Sessions). Imported (warm-compile-cache.ts), it only loads.
import { loadConnection } from '../common/kube/kubeconfig.ts';
import { createLogger, makeRedactor } from '../common/log.ts';
import { configOrExit, exitOnSignal } from '../common/process.ts';
import { ConfigError, loadConfig } from './config.ts';
import { parsePolicy } from './policy.ts';
import { createRunnerPod } from './wiring.ts';

/** Kubernetes' default grace period is 30 s; finish well inside it. */
const SHUTDOWN_DEADLINE_MS = 20_000;

async function main(): Promise<never> {
  const config = configOrExit('runner', loadConfig, (error) => error instanceof ConfigError);
  const policy = configOrExit('runner', () => parsePolicy(config.policyJson));
  const redact = makeRedactor(config.secrets);
  const log = createLogger({
    component: 'runner',
    level: config.logLevel,
    redact,
    // Each Session's lines name it; a live runner's lines between Sessions name its Pod.
    bindings: config.live ? { pod: config.live.podName } : {},
  });
  // No metrics: a runner Pod serves nothing; its progress is the Session's status.
  const kube = await loadConnection(config.kube);
  const pod = await createRunnerPod({ config, policy, log, redact, kube, now: () => new Date() });

  log.info({ agent: pod.agent, startupMs: Math.round(process.uptime() * 1000) }, 'runner ready');
  const finished = pod.run();
  exitOnSignal(
    log,
    'stopping: killing the agent and writing the final status',
    (signal) => {
      pod.stop(signal);
      return finished;
    },
    SHUTDOWN_DEADLINE_MS,
  );
  process.exit(await finished);
}

if (import.meta.main) await main();
