// The runner Pod's entrypoint: node /app/runner-image/main.ts. Wires config, logger, kube client,
// the agent and the Session; exits 0 once a terminal phase is written or found.
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { phoneHash } from '../common/session/display.ts';
import { isTerminal } from '../common/session/state-machine.ts';
import { ClaudeAgent } from './agents/claude.ts';
import { ConfigError, loadConfig, scriptedModelEnv, type RunnerConfig } from './config.ts';
import { Git } from './git.ts';
import { Browsers } from './images.ts';
import { parsePolicy } from './policy.ts';
import { makeLogger, makeRedactor } from './redact.ts';
import { Runner } from './runner.ts';
import { startScriptedModel } from './scripted-model/server.ts';
import { watchSession } from './session-watch.ts';
import { SessionFinished, StatusWriter } from './status.ts';

/** Kubernetes' default grace period is 30 s; finish well inside it. */
const SHUTDOWN_DEADLINE_MS = 20_000;

function configOrExit(): RunnerConfig {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`tether-runner: ${error.message}\n`);
    process.exit(2);
  }
}

const config = configOrExit();
const redact = makeRedactor(config.secrets);
const log = makeLogger(config.logLevel, redact, { component: 'runner', session: config.session.name });
const policy = (() => {
  try {
    return parsePolicy(config.policyJson);
  } catch (error) {
    process.stderr.write(`tether-runner: ${(error as Error).message}\n`);
    return process.exit(2);
  }
})();

const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();
const status = new StatusWriter({ api: kubeConfig.makeApiClient(CustomObjectsApi), namespace: config.session.namespace, name: config.session.name, redact, log });
await mkdir(config.home, { recursive: true });

const scriptedModel = config.scriptedModel ? await startScriptedModel() : undefined;
const agent = new ClaudeAgent({
  env: scriptedModel ? scriptedModelEnv(config.agentEnv, scriptedModel.url) : config.agentEnv,
  model: config.model, log, claudePath: config.claudePath, instructions: readFileSync(new URL('./CLAUDE.md', import.meta.url), 'utf8'),
});
const browsers = new Browsers();
let sessionGone = false;
const runner = new Runner({
  status, agent, browsers, policy, log, redact,
  git: new Git({ repoDir: config.repoDir, token: config.github.token, author: config.gitAuthor, redact, env: { PATH: config.agentEnv.PATH!, HOME: config.home } }),
  media: { workspace: config.workspace, namespace: config.session.namespace, session: config.session.name, relay: config.relay },
  repoDir: config.repoDir,
  github: config.github,
});

const offPhone = status.onChange((s) => {
  log.setBindings({ phoneHash: phoneHash(s.spec.phone) });
  offPhone();
});
const watch = watchSession({
  kubeConfig, namespace: config.session.namespace, name: config.session.name, log,
  onSession: (s) => status.observe(s),
  onDeleted: () => {
    sessionGone = true;
    runner.stop.abort('deleted');
  },
  refresh: async () => void (await status.load()),
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info({ signal }, 'stopping: killing the agent and writing the final status');
    runner.stop.abort(signal);
    setTimeout(() => {
      log.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
  });
}

const started = Date.now();
log.info({ agent: agent.name, model: scriptedModel ? `scripted model at ${scriptedModel.url}` : config.model, startupMs: Math.round(process.uptime() * 1000) }, 'runner ready');
let exitCode = 0;
try {
  await runner.run();
  await status.flush().catch((error: unknown) => {
    if (!(error instanceof SessionFinished)) throw error;
  });
  log.info({ phase: status.phase, ms: Date.now() - started, statusWrites: status.writes }, 'runner done');
  // Exit 0 only with a final phase on the Session: anything else is for the controller to see as lost.
  if (!isTerminal(status.phase) && !sessionGone) exitCode = 1;
} catch (error) {
  log.error({ err: error }, 'runner crashed');
  exitCode = 1;
} finally {
  watch.stop();
  await browsers.close();
  await scriptedModel?.close();
}
process.exit(exitCode);
