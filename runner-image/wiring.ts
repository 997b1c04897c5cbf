// Everything a runner Pod runs, from the parts main.ts makes (config, logger, API connection). The
// Pod's parts live across its Sessions (the agent channel, the model endpoint, Chromium, the git
// store on disk); each Session gets its own watch, status writer, git handle, agent and Runner.
import { relative } from 'node:path';
import type { KubeConnection } from '../common/kube/connection.ts';
import { createInformer } from '../common/kube/informer.ts';
import { collectionPath, KINDS } from '../common/kube/resources.ts';
import { FIELD_MANAGERS, SessionClient } from '../common/kube/sessions.ts';
import type { LearningRedactor, Logger } from '../common/log.ts';
import { LABEL_PHONE_HASH, runnerIdentityName } from '../common/session/names.ts';
import type { Session } from '../common/session/schema.ts';
import { isTerminal } from '../common/session/state-machine.ts';
import { AgentChannel, CHANNEL_DEFAULTS } from './agent-channel/channel.ts';
import { ClaudeAgent } from './agents/claude.ts';
import { agentSdk } from './agents/sdk.ts';
import { sessionAgentEnv, type RunnerConfig } from './config.ts';
import { RoleWatch } from './live/role-watch.ts';
import { Serve, type LiveParts, type SessionRun } from './live/serve.ts';
import { Git } from './git/store.ts';
import { githubToken } from './git/token.ts';
import { imageInstructions } from './image-files.ts';
import { browserEnvironment, Browsers } from './pictures/chromium.ts';
import type { Policy } from './policy.ts';
import { startModelEndpoint, type ModelEndpoint } from './model/endpoint.ts';
import { ModelSpend } from './model/spend.ts';
import { Runner } from './runner.ts';
import { SessionFinished, StatusWriter } from './status.ts';
import { makeWorkspaceDirs } from './workspace/fs.ts';
import { supervisorProxyUrl } from './egress/env.ts';
import { proxyAgents, type ProxyAgents } from './egress/http.ts';
import { openEgressLink } from './egress/link.ts';

export interface RunnerPodParts {
  config: RunnerConfig;
  policy: Policy;
  log: Logger;
  /** Learns each GitHub token read from the token file. */
  redact: LearningRedactor;
  kube: KubeConnection;
  /** The runner's one clock: every time it writes or measures comes from here. */
  now: () => Date;
}

export interface RunnerPod {
  readonly agent: string;
  /**
   * Runs the Session, and for a live runner each later one bound to the Pod; resolves with the exit
   * code: 0 once a final phase is on the last Session (or it is gone), or when stopped while idle.
   */
  run(): Promise<number>;
  /** Stops the agent (run() then writes the final status), or the wait for the next Session. */
  stop(reason: string): void;
}

/** The parts of the Pod every Session uses. */
interface PodParts {
  channel: AgentChannel | undefined;
  endpoint: ModelEndpoint | undefined;
  /** The proxy's meter, handed to each run in turn. */
  modelSpend: ModelSpend;
  browsers: Browsers;
  /** Set: the supervisor's own calls go through the egress proxy with these. */
  egress: ProxyAgents | undefined;
}

/**
 * Claude Code of one Session, in the agent container when there is a channel (its key then always a
 * dummy one); with egress, its way out is the proxy with the Session's own credential.
 */
function makeAgent(config: RunnerConfig, log: Logger, pod: PodParts, session: string): ClaudeAgent {
  const { endpoint, channel } = pod;
  return new ClaudeAgent({
    env: sessionAgentEnv(config, session, endpoint?.url),
    model: config.model,
    log,
    claudePath: config.claudePath,
    instructions: imageInstructions(),
    workspace: config.workspace,
    channel,
  });
}

/** Claude Code's HOME on the workspace, which the agent container's user (when there is one) may write too. */
async function makeAgentHome(config: RunnerConfig): Promise<void> {
  // The agent container's uid shares the workspace through the Pod's group: what either writes, both may change.
  if (config.agentSocket) process.umask(0o002);
  // 0777 as mkdir(1): the umask decides, and the agent's group must be able to write its HOME.
  await makeWorkspaceDirs(config.workspace, relative(config.workspace, config.home), 0o777);
}

/** The forge API's URL and the token at each use (read again from its file, learned by the redactor). */
const github = (config: RunnerConfig, redact: LearningRedactor, proxy: ProxyAgents | undefined) => ({
  apiUrl: config.github.apiUrl,
  token: githubToken(config.github, redact.learn),
  ...(proxy ? { proxy } : {}),
});

/** One Session's run on the Pod's parts: its watch, status writer, git handle and Runner. */
function runSession(parts: RunnerPodParts, pod: PodParts, name: string, onPhone: (hash: string) => void): SessionRun {
  const { config, redact } = parts;
  const { namespace } = config.session;
  const log = parts.log.child({ session: name });
  const status = new StatusWriter({
    sessions: new SessionClient(parts.kube, FIELD_MANAGERS.runner),
    namespace,
    name,
    redact,
    log,
    now: parts.now,
  });
  const { channel, endpoint, modelSpend } = pod;
  const egress = config.egress && openEgressLink({ egress: config.egress, session: name, status, log });
  const runner = new Runner({
    status,
    agent: makeAgent(config, log, pod, name),
    browsers: pod.browsers,
    policy: parts.policy,
    log,
    redact,
    // The proxy meters every model call when it is in use; otherwise Claude Code's reports do.
    modelSpend: endpoint && 'spend' in endpoint ? modelSpend : undefined,
    git: new Git({
      workspace: config.workspace,
      checkout: config.checkout,
      storeDir: config.gitStore,
      token: github(config, redact, pod.egress).token,
      author: config.gitAuthor,
      redact,
      path: config.agentEnv.PATH!,
      proxy: config.gitProxy,
    }),
    media: { dir: config.mediaDir, namespace, session: name, relay: config.relay },
    workspace: config.workspace,
    repoDir: config.repoDir,
    github: github(config, redact, pod.egress),
    repoHosts: config.repoHosts,
    now: parts.now,
    freezeAgent: channel && (() => channel.freeze()),
    egress: egress?.link,
  });
  const offPhone = status.onChange((s) => {
    // The runner holds no hash key: it logs the hash the relay labelled the Session with.
    const hash = s.metadata.labels?.[LABEL_PHONE_HASH];
    if (hash) onPhone(hash);
    offPhone();
  });
  let gone = false;
  const watch = createInformer<Session>({
    kube: parts.kube,
    path: collectionPath(KINDS.sessions, namespace),
    name,
    logger: log.child({ informer: 'session' }),
  });
  watch.onChange((_key, session) => {
    if (session) return status.noticed(session);
    gone = true;
    runner.stop.abort('deleted');
  });

  const run = async (): Promise<number> => {
    const started = parts.now().getTime();
    // It rejects only when stopped before its first read, which the finished run no longer needs.
    watch.start().catch(() => undefined);
    try {
      await runner.run();
      await status.flush().catch((error: unknown) => {
        if (!(error instanceof SessionFinished)) throw error;
      });
      log.info(
        { phase: status.phase, ms: parts.now().getTime() - started, statusWrites: status.writes },
        'runner done',
      );
      // Exit 0 only with a final phase on the Session: anything else is for the controller to see as lost.
      return isTerminal(status.phase) || gone ? 0 : 1;
    } catch (error) {
      log.error({ err: error }, 'runner crashed');
      return 1;
    } finally {
      watch.stop();
      egress?.close();
    }
  };
  return { done: run(), stop: (reason) => runner.stop.abort(reason) };
}

async function makePodParts(parts: RunnerPodParts): Promise<PodParts> {
  const { config, log, redact } = parts;
  await makeAgentHome(config);
  const channel = config.agentSocket
    ? await AgentChannel.listen({
        ...CHANNEL_DEFAULTS,
        socketPath: config.agentSocket,
        log: log.child({ channel: 'agent' }),
        secrets: redact.known,
      })
    : undefined;
  const modelSpend = new ModelSpend();
  const egress = config.egress && proxyAgents(supervisorProxyUrl(config.egress));
  const endpoint = await startModelEndpoint(config, log, modelSpend, egress);
  return {
    channel,
    endpoint,
    modelSpend,
    egress,
    browsers: new Browsers({ env: browserEnvironment(`${config.gitStore}/home`, config.agentEnv.PATH!) }),
  };
}

/**
 * Between two Sessions: nothing of the agent's last run may reach the next (docs/security.md,
 * "Between commands"): every process of the agent container killed, its TMPDIR emptied, the agent
 * host re-exec'd.
 */
async function resetAgent(channel: AgentChannel | undefined, log: Logger): Promise<void> {
  // Without a channel Claude Code ran as the runner's child, stopped whole when its run ended.
  if (!channel) return;
  // Every process killed (checked), the container's TMPDIR emptied, the agent host re-exec'd; rejects with why not.
  const report = await channel.reset();
  if (report.lingering) throw new Error(`${report.lingering} of the agent's processes did not stop`);
  log.info({ ...report }, 'agent container reset');
}

/** A live runner's idle parts: the agent's reset and the watch on the phone's Role. */
function liveParts(parts: RunnerPodParts, pod: PodParts, phoneHash: string | undefined): LiveParts | undefined {
  const { config, log } = parts;
  if (!config.live) return undefined;
  if (!phoneHash) {
    log.warn('the Session has no phone-hash label: no Role to watch, so no next Session');
    return undefined;
  }
  const watch = new RoleWatch({
    kube: parts.kube,
    sessions: new SessionClient(parts.kube, FIELD_MANAGERS.runner),
    namespace: config.session.namespace,
    role: runnerIdentityName(phoneHash),
    podName: config.live.podName,
    seen: [config.session.name],
    log,
  });
  return {
    resetAgent: () => resetAgent(pod.channel, log),
    next: (signal) => watch.next(signal),
    close: () => watch.stop(),
  };
}

export async function createRunnerPod(parts: RunnerPodParts): Promise<RunnerPod> {
  const { config, log } = parts;
  const pod = await makePodParts(parts);
  let phoneHash: string | undefined;
  const serve = new Serve({
    first: config.session.name,
    runSession: (name) =>
      runSession(parts, pod, name, (hash) => {
        phoneHash = hash;
        log.setBindings({ phoneHash: hash });
      }),
    live: config.live && (() => liveParts(parts, pod, phoneHash)),
    log,
    now: parts.now,
  });

  const run = async (): Promise<number> => {
    // Loads while the workspace is prepared; a failure shows where the agent starts.
    agentSdk().catch(() => undefined);
    try {
      return await serve.run();
    } catch (error) {
      log.error({ err: error }, 'the Pod cannot serve another Session');
      return 1;
    } finally {
      await pod.browsers.close();
      await pod.endpoint?.close();
      await pod.channel?.close();
    }
  };
  const model = config.scriptedModel ? `scripted model at ${pod.endpoint!.url}` : config.model;
  return { agent: `claude (${model})`, run, stop: (reason) => serve.stop(reason) };
}
