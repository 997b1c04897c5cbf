// The whole system on one machine, on top of a running control plane: the Session CRD,
// the controller and relay as processes, and the local node agent that runs runner Pods.
// Both are supervised (supervise.ts): restarted after an unexpected exit, with a line saying so.
// Used by `make dev` (local/dev.ts) and by the end-to-end tests.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type pino from 'pino';
import { isAlreadyExists } from '../common/kube/errors.ts';
import { ANTHROPIC_API_URL } from '../runner-image/config.ts';
import { hostEnv, imageStoreDir } from './config.ts';
import { egressEnv, localEgress, type LocalEgress } from './egress.ts';
import { installSessionCrd } from './control-plane/crd.ts';
import { freePort, planePorts } from './control-plane/control-plane.ts';
import { checkNodeFolders } from './node-agent/folder-checks.ts';
import { canSwitchUser } from './node-agent/identity.ts';
import { RUNNER_IMAGE } from './node-agent/image-content.ts';
import { LOCAL_IMAGES } from './node-agent/image-pull.ts';
import { stageImage, type StagedImage } from './node-agent/image-store.ts';
import { startNodeAgent, type NodeAgent } from './node-agent/node-agent.ts';
import { startManaged, untilHttpOk, type Managed } from './control-plane/processes.ts';
import { phoneHasher, type PhoneHash } from '../common/session/phone-hash.ts';
import { closeTree, keptSecret, writePrivateFile } from './private-files.ts';
import { supervise, type Supervised } from './supervise.ts';
import { RUNNER_SECRET, stackEnv, stackRepoHosts, type StackGitHub } from './stack-env.ts';

export interface StackOptions {
  kubeconfig: string;
  /** Repository root: the relay and controller run from it, the runner image is staged from it. */
  repoRoot: string;
  stateDir: string;
  /** Where the node agent keeps the images it stages, as root (default: TETHER_IMAGE_DIR, see local/config.ts). */
  imageStore?: string;
  namespace?: string;
  /** git remote for new Sessions. */
  repoUrl: string;
  githubApiUrl: string;
  relayPort?: number;
  /**
   * Settings for the relay (Twilio, timeouts, TETHER_REPOS …) and the controller; they win over the stack's own
   * (stack-env.ts).
   */
  relayEnv?: Record<string, string>;
  controllerEnv?: Record<string, string>;
  /**
   * How long a finished Session's runner Pod stays live for the phone's next command (the controller's
   * TETHER_RUNNER_KEEP_ALIVE, e.g. '10m'; '0' = off; default: the controller's own, 10m).
   */
  keepAlive?: string;
  /** Repository host list entries besides the repositories' own, which the relay and the controller always get. */
  repoHosts?: string[];
  /** Secret values the runner Pods receive (ANTHROPIC_API_KEY, GITHUB_TOKEN). */
  runnerSecrets?: Record<string, string>;
  /**
   * The relay's webhook secret and an App for the controller; the relay's token is the runners' GITHUB_TOKEN,
   * in a file of the state folder (as the chart mounts a personal token).
   */
  github?: Omit<StackGitHub, 'relayTokenFile'>;
  /** Extra environment for every Pod process the node agent starts (a test's proxy guard). */
  podEnv?: Record<string, string>;
  /**
   * The egress proxy's settings besides the stack's own (egress.ts): the agent's list (TETHER_EGRESS_ALLOW),
   * repository additions (TETHER_EGRESS_REPOSITORIES), TETHER_EGRESS_ASK …; they win.
   */
  egressEnv?: Record<string, string>;
  logger: pino.Logger;
  /** Each output line of a component: controller, relay, runner <pod>, or supervisor (restarts). */
  onLine?: (component: string, line: string) => void;
}

export interface Stack {
  namespace: string;
  /** Where runner Pods, workspaces and the runner Secret live (as the chart's <namespace>-runners). */
  runnerNamespace: string;
  relayUrl: string;
  chatToken: string;
  chatUrl: string;
  mediaSigningKey: string;
  /** The stack's keyed phone hash (its key is kept in the state folder, so names survive a restart). */
  phoneHash: PhoneHash;
  nodeAgent: NodeAgent;
  /** The egress proxy every runner's traffic goes through (its URL has /metrics and /healthz). */
  egress: LocalEgress;
  restart(component: Component): Promise<void>;
  /** The component's process as it runs now. */
  process(component: Component): Managed;
  stop(): Promise<void>;
}

type Component = 'controller' | 'relay' | 'egress';

/** The runner Pod's container whose processes are the agent's (controller/builders.ts): its own network, as root. */
const AGENT_CONTAINER = 'agent';

/** Where the runners' model calls go when not to a scripted model of their own: the supervisor reaches it. */
function modelUpstream(options: StackOptions): string[] {
  const url =
    options.controllerEnv?.TETHER_RUNNER_ANTHROPIC_BASE_URL ??
    options.podEnv?.ANTHROPIC_BASE_URL ??
    (options.runnerSecrets?.ANTHROPIC_API_KEY ? ANTHROPIC_API_URL : undefined);
  return url ? [url] : [];
}

/** The Session CRD, the stack's two namespaces and the runner Secret (kept when they are there already). */
async function prepareCluster(
  kc: KubeConfig,
  namespace: string,
  runnerNamespace: string,
  runnerSecrets: Record<string, string>,
): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const unlessThere = (e: unknown) => {
    if (!isAlreadyExists(e)) throw e;
  };
  await installSessionCrd(kc);
  for (const name of [namespace, runnerNamespace])
    await core.createNamespace({ body: { metadata: { name } } }).catch(unlessThere);
  await core
    .createNamespacedSecret({
      namespace: runnerNamespace,
      body: { metadata: { name: RUNNER_SECRET }, stringData: runnerSecrets },
    })
    .catch(unlessThere);
}

/** The local node agent, for runner Pods, once the runner image (staged since `stagingStarted`) is ready. */
async function startRunnerNode(
  options: StackOptions,
  kc: KubeConfig,
  { namespace, runnerNamespace }: { namespace: string; runnerNamespace: string },
  runnerImage: Promise<StagedImage>,
  stagingStarted: number,
): Promise<NodeAgent> {
  const cluster = kc.getCurrentCluster()!;
  const staged = await runnerImage;
  const nodeLogger = options.logger.child({ component: 'node-agent' });
  nodeLogger.info(
    { image: RUNNER_IMAGE.name, at: staged.app, ms: Math.round(performance.now() - stagingStarted), ...staged.counts },
    'runner image ready',
  );
  return startNodeAgent({
    kubeConfig: kc,
    logger: nodeLogger,
    images: Object.fromEntries(LOCAL_IMAGES.map((name) => [name, staged])),
    stateDir: options.stateDir,
    server: cluster.server,
    caFile: cluster.caFile!,
    namespace: runnerNamespace,
    nodeName: `local-${namespace}`,
    // Each container as its own user on its Pod's ids (as root; otherwise the node agent warns and runs them all
    // as itself).
    runAsUsers: true,
    // As root, a runner Pod's network is its own: the API server, the relay and the egress proxy carried in (else the
    // node agent says egress is open).
    isolatedNetwork: { containers: [AGENT_CONTAINER] },
    env: { TETHER_LOG_LEVEL: 'info', ...options.podEnv },
    onPodOutput: (pod, line) => options.onLine?.(`runner ${pod.split('/')[1]}`, line),
  });
}

/** The runners' GITHUB_TOKEN in a file of the state folder, for the relay (TETHER_GITHUB_TOKEN_FILE). */
async function relayTokenFile(options: StackOptions): Promise<{ relayTokenFile?: string }> {
  const token = options.runnerSecrets?.GITHUB_TOKEN;
  if (!token) return {};
  const path = join(options.stateDir, 'relay-github-token');
  await writePrivateFile(path, token);
  return { relayTokenFile: path };
}

/** The stack's own loopback listeners: the control plane, the relay, the controller's port, the GitHub stand-in. */
function stackPorts(
  options: StackOptions,
  kc: KubeConfig,
  relayPort: number,
  controllerEnv: Record<string, string>,
): number[] {
  const loopbackPort = (url: string) => {
    const { hostname, port } = new URL(url);
    return ['127.0.0.1', 'localhost', '[::1]'].includes(hostname) && port ? [Number(port)] : [];
  };
  return [
    ...planePorts(options.kubeconfig),
    ...loopbackPort(kc.getCurrentCluster()!.server),
    relayPort,
    Number(controllerEnv.TETHER_METRICS_PORT),
    ...loopbackPort(options.githubApiUrl),
  ];
}

/** The runner image staged, and its compile cache filled, while the relay and the controller start. */
function stageRunnerImage(options: StackOptions, imageStore: string) {
  const stagingStarted = performance.now();
  const runnerImage = stageImage(RUNNER_IMAGE, {
    repoRoot: options.repoRoot,
    stateDir: options.stateDir,
    store: imageStore,
    asUsers: canSwitchUser(),
    env: hostEnv(),
  });
  runnerImage.catch(() => undefined); // awaited by startRunnerNode
  return { runnerImage, stagingStarted };
}

/** One of the stack's components as a supervised process of `node <component>/main.ts`. */
function superviseComponent(options: StackOptions, name: Component, env: Record<string, string>, logs: string) {
  const start = async () =>
    startManaged(name, process.execPath, [join(options.repoRoot, name, 'main.ts')], join(logs, `${name}.log`), {
      env,
      cwd: options.repoRoot,
      onLine: (line) => options.onLine?.(name, line),
    });
  return supervise(name, start, (line) => options.onLine?.('supervisor', line));
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const imageStore = options.imageStore ?? imageStoreDir();
  checkNodeFolders(options.stateDir, imageStore);
  const namespace = options.namespace ?? 'tether';
  const runnerNamespace = `${namespace}-runners`;
  // A list the relay would refuse stops here, before anything starts.
  const repoHosts = stackRepoHosts(options.repoUrl, options.relayEnv, options.repoHosts);
  const kc = new KubeConfig();
  kc.loadFromFile(options.kubeconfig);
  await prepareCluster(kc, namespace, runnerNamespace, options.runnerSecrets ?? {});
  // The stack's own state — component logs, the relay's journal and media — is its user's alone.
  const logs = join(options.stateDir, 'logs');
  for (const dir of ['logs', 'journal', 'media']) closeTree(join(options.stateDir, dir));

  const relayPort = options.relayPort ?? (await freePort());
  const relayUrl = `http://127.0.0.1:${relayPort}`;
  const chatToken = randomBytes(16).toString('hex');
  const mediaSigningKey = randomBytes(32).toString('hex');
  const phoneHashKey = await keptSecret(join(options.stateDir, 'phone-hash-key'));
  const github = { ...options.github, ...(await relayTokenFile(options)) };
  const egress = await localEgress(options.stateDir);
  const where = { namespace, runnerNamespace, relayUrl, relayPort, metricsPort: await freePort() };
  const components = stackEnv({ ...options, ...where, chatToken, mediaSigningKey, phoneHashKey, github, egress });
  const proxyEnv = egressEnv({
    ...{ kubeconfig: options.kubeconfig, namespace, runnerNamespace, egress, repoHosts, env: options.egressEnv },
    supervisorUrls: [options.githubApiUrl, ...modelUpstream(options)],
    ownPorts: stackPorts(options, kc, relayPort, components.controller),
  });
  const envOf = (name: Component) => (name === 'egress' ? proxyEnv : components[name]);
  const { runnerImage, stagingStarted } = stageRunnerImage(options, imageStore);
  const procs: Partial<Record<Component, Supervised>> = {};
  const launch = async (name: Component) => {
    procs[name] = await superviseComponent(options, name, envOf(name), logs);
  };

  await launch('egress');
  await untilHttpOk(`${egress.url}/healthz`, procs.egress!.current());
  await launch('relay');
  await untilHttpOk(`${relayUrl}/healthz`, procs.relay!.current());
  await launch('controller');

  const nodeAgent = await startRunnerNode(options, kc, { namespace, runnerNamespace }, runnerImage, stagingStarted);

  return {
    namespace,
    runnerNamespace,
    relayUrl,
    chatToken,
    mediaSigningKey,
    phoneHash: phoneHasher(phoneHashKey),
    nodeAgent,
    egress,
    chatUrl: `${relayUrl}/chat?token=${chatToken}`,
    async restart(name) {
      await procs[name]!.restart(10_000);
      if (name === 'relay') await untilHttpOk(`${relayUrl}/healthz`, procs.relay!.current());
      if (name === 'egress') await untilHttpOk(`${egress.url}/healthz`, procs.egress!.current());
    },
    process: (name) => procs[name]!.current(),
    async stop() {
      await procs.controller?.stop(10_000);
      await nodeAgent.stop();
      await procs.relay?.stop(10_000);
      await procs.egress?.stop(10_000);
    },
  };
}
