// End-to-end harness: the whole stack in a fresh namespace of the run's control plane, a
// fake Twilio Messages API, the GitHub stand-in over the local bare remotes (its webhooks to the
// relay when asked), and a "phone" that sends signed webhooks and reads what the fake Twilio
// received, in order.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { inject } from 'vitest';
import { SessionClient } from '../../common/kube/sessions.ts';
import { byArrival } from '../../common/session/order.ts';
import type { Session } from '../../common/session/schema.ts';
import { ensureSampleRepo, sampleRepoPath, serveRemotes } from '../../local/sample-repo.ts';
import { startStack, type Stack } from '../../local/stack.ts';
import type { GitHubStandIn } from '../../local/github/stand-in.ts';
import { startLocalGitHub, type LocalGitHub } from '../../local/github/local-github.ts';
import type { GitHubStandInOptions } from '../../local/github/stand-in.ts';
import { startFakeTwilio, type FakeMessage, type FakeTwilio, type InboundMediaItem } from '../fakes/twilio.ts';
import { eventually } from './eventually.ts';
import { startRefusingProxy } from './refusing-proxy.ts';
import { mediaMessageSid, messageSid, postWebhook, signedWebhook, tapWebhook } from './twilio-webhook.ts';

export interface Phone {
  number: string;
  send(text: string): Promise<void>;
  /** Sends media (a photo, a PDF, a voice note) with a caption, as Twilio delivers it. */
  sendMedia(caption: string, items: InboundMediaItem[]): Promise<void>;
  /**
   * Taps the button titled `title` on a message this phone received (a signed webhook carrying
   * its ButtonPayload, as Twilio posts it). `sid` repeats an earlier tap's webhook; returns the sid.
   */
  tap(message: FakeMessage, title: string, sid?: string): Promise<string>;
  /** Everything this phone received so far. */
  received(): FakeMessage[];
  /** Waits for the next message (after the last one matched) whose body matches; returns it. */
  next(pattern: RegExp, timeoutMs?: number): Promise<FakeMessage>;
  /** Messages received after the last matched one. */
  unread(): FakeMessage[];
}

export interface E2E {
  stack: Stack;
  twilio: FakeTwilio;
  github: GitHubStandIn;
  /** The secret the stand-in signs the relay's webhook deliveries with (with `githubWebhooks`). */
  githubWebhookSecret?: string;
  /** The App the controller mints tokens from (with `githubApp`): its ids and key pair. */
  githubApp?: LocalGitHub['app'];
  /** The sample remote's bare repository on this machine (the stack's user's alone; Sessions name its forge URL). */
  remote: string;
  /** The forge's URL of the sample remote (what Sessions name). */
  remoteUrl: string;
  /** The token runners push and open pull requests with (the runner Secret's GITHUB_TOKEN). */
  githubToken: string;
  stateDir: string;
  sessions: SessionClient;
  kubeConfig: KubeConfig;
  phone(number: string): Phone;
  /** Sessions of the stack's namespace, in arrival order. */
  list(): Promise<Session[]>;
  /** Every output line of the stack's components and Pods so far (`component: line`). */
  logs(): string[];
  stop(): Promise<void>;
}

let counter = 0;

/**
 * A phone that sends signed webhooks to the relay at `relayUrl` and reads what the fake Twilio got for it.
 * The webhooks are signed for `signedUrl` (the relay's public URL, when an Ingress stands in between).
 */
/**
 * A fresh folder (0755) for files an agent's commands read, such as a test's script: under the stack's state
 * folder, which an agent's mount namespace keeps (the host's /tmp is covered there).
 */
export function agentFolder(e2e: Pick<E2E, 'stateDir'>, prefix: string): string {
  const folder = mkdtempSync(join(e2e.stateDir, prefix));
  chmodSync(folder, 0o755);
  return folder;
}

export function twilioPhone(twilio: FakeTwilio, relayUrl: string, number: string, signedUrl = relayUrl): Phone {
  let cursor = 0;
  const received = () => twilio.to(number);
  const post = async (hook: ReturnType<typeof signedWebhook>) => {
    const response = await postWebhook(`${relayUrl}/webhook`, hook);
    if (response.status !== 200) throw new Error(`webhook answered ${response.status}: ${await response.text()}`);
  };
  return {
    number,
    received,
    unread: () => received().slice(cursor),
    async send(text) {
      await post(signedWebhook(twilio.authToken, `${signedUrl}/webhook`, { from: number, body: text }));
    },
    async sendMedia(caption, items) {
      const sid = mediaMessageSid();
      await post(
        signedWebhook(twilio.authToken, `${signedUrl}/webhook`, {
          from: number,
          body: caption,
          sid,
          media: twilio.inboundMedia(sid, items),
        }),
      );
    },
    async tap(message, title, sid = messageSid()) {
      const button = message.buttons?.find((b) => b.title === title);
      if (!button)
        throw new Error(
          `no button "${title}" on: ${message.body} [${(message.buttons ?? []).map((b) => b.title).join(', ')}]`,
        );
      const hook = tapWebhook(twilio.authToken, `${signedUrl}/webhook`, {
        from: number,
        title,
        payload: button.id,
        repliedTo: message.sid,
        sid,
      });
      const response = await postWebhook(`${relayUrl}/webhook`, hook);
      if (response.status !== 200) throw new Error(`webhook answered ${response.status}: ${await response.text()}`);
      return sid;
    },
    async next(pattern, timeoutMs = 60_000) {
      return eventually(
        () => {
          const all = received();
          const index = all.findIndex((m, i) => i >= cursor && pattern.test(m.body));
          if (index < 0)
            throw new Error(
              `no message matching ${pattern} after #${cursor}; received:\n` +
                all
                  .map(
                    (m, i) =>
                      `${i}: ${m.body}${m.mediaUrls.length ? ' [media]' : ''}` +
                      (m.buttons ? ` [${m.buttons.map((b) => b.title).join(' | ')}]` : ''),
                  )
                  .join('\n'),
            );
          cursor = index + 1;
          return all[index]!;
        },
        timeoutMs,
        50,
      );
    },
  };
}

export interface E2EOptions {
  relayEnv?: Record<string, string>;
  controllerEnv?: Record<string, string>;
  /**
   * How long a finished Session's runner Pod stays live for the phone's next command (TETHER_RUNNER_KEEP_ALIVE).
   * Default '0' (off): each command gets a Pod of its own, as the tests written before live runners expect.
   */
  keepAlive?: string;
  numbers?: string[];
  /** The runner Secret's values (ANTHROPIC_API_KEY, GITHUB_TOKEN). */
  runnerSecrets?: Record<string, string>;
  /**
   * More repositories beside `sample` (acme/<name>.git on the same forge), offered to the relay as
   * TETHER_REPOS: a name (a sample repository) or a name and `make(bare)`, which creates the bare
   * repository at `bare` (a test's own, e.g. a hostile one).
   */
  moreRepos?: Array<string | { name: string; make(bare: string): void }>;
  /** The stack's API server (default: the run's control plane); e.g. a second API server a test pauses. */
  kubeconfig?: string;
  /** More environment for every Pod process (e.g. ANTHROPIC_BASE_URL of a test's scripted model). */
  podEnv?: Record<string, string>;
  /**
   * Prepares the fake Twilio before the relay starts (e.g. an operator's templates); returns more relay environment.
   */
  prepareTwilio?(twilio: FakeTwilio): Promise<Record<string, string>>;
  /**
   * GitHub's webhooks to the relay: the stand-in signs every delivery to <relay>/github/webhook with a secret the
   * relay is given (TETHER_GITHUB_WEBHOOK_SECRET).
   */
  githubWebhooks?: boolean;
  /** An App on acme: the controller gets TETHER_GITHUB_APP_* and mints installation tokens from the stand-in. */
  githubApp?: boolean;
  /** More of the stand-in's options: its CI, token lifetime, webhook retries, the login of the fixed token. */
  github?: Pick<GitHubStandInOptions, 'ci' | 'tokenLifetimeMs' | 'webhooks' | 'login'>;
  /**
   * The egress proxy's lists: the agent's entries (TETHER_EGRESS_ALLOW), additions per repository by its name
   * (`sample` or a `moreRepos` name; TETHER_EGRESS_REPOSITORIES), and more of its settings (TETHER_EGRESS_ASK …).
   */
  egress?: { allow?: string[]; repositories?: Record<string, string[]>; env?: Record<string, string> };
}

/** The proxy's settings of a test: its repositories named by their forge URLs. */
function egressSettings(options: E2EOptions, urlOf: (name: string) => string): Record<string, string> {
  const egress = options.egress ?? {};
  const repositories = Object.entries(egress.repositories ?? {}).map(([name, entries]) => [urlOf(name), entries]);
  return {
    ...(egress.allow ? { TETHER_EGRESS_ALLOW: egress.allow.join(',') } : {}),
    ...(repositories.length ? { TETHER_EGRESS_REPOSITORIES: JSON.stringify(Object.fromEntries(repositories)) } : {}),
    ...egress.env,
  };
}

/**
 * A test's own model (ANTHROPIC_BASE_URL without a key) is reached through the supervisor's model proxy, with a
 * key the model does not check, in the runner Secret (the runner container's alone): the Pod's network (root) does
 * not have the test's port, and the model proxy reaches it through the egress proxy. Not Claude Code's dummy key:
 * the runner refuses to hand a credential of its own to the agent.
 */
const TEST_MODEL_KEY = 'sk-ant-e2e-test-model';
function throughModelProxy(options: E2EOptions): Record<string, string> {
  const keyed = options.podEnv?.ANTHROPIC_API_KEY ?? options.runnerSecrets?.ANTHROPIC_API_KEY;
  return options.podEnv?.ANTHROPIC_BASE_URL && !keyed ? { ANTHROPIC_API_KEY: TEST_MODEL_KEY } : {};
}

export async function startE2E(options: E2EOptions = {}): Promise<E2E> {
  const numbers = options.numbers ?? ['+14155550123'];
  const stateDir = mkdtempSync(join(tmpdir(), 'tether-e2e-'));
  const githubToken = options.runnerSecrets?.GITHUB_TOKEN ?? `ghp_e2e${randomBytes(16).toString('hex')}`;
  const remoteRoot = join(stateDir, 'remote');
  const [twilio, local, proxy] = await Promise.all([
    startFakeTwilio(),
    startLocalGitHub({
      token: githubToken,
      stateDir,
      webhooks: options.githubWebhooks ?? false,
      app: options.githubApp ?? false,
      standIn: { ...options.github, root: remoteRoot },
    }),
    startRefusingProxy(),
  ]);
  const github = local.github;
  const remote = await ensureSampleRepo(remoteRoot);
  const more = await Promise.all(
    (options.moreRepos ?? []).map(async (repo) => {
      if (typeof repo === 'string') return { name: repo, path: await ensureSampleRepo(remoteRoot, repo) };
      const path = sampleRepoPath(remoteRoot, repo.name);
      repo.make(path);
      return { name: repo.name, path };
    }),
  );
  const forge = await serveRemotes(remoteRoot, [remote, ...more.map((r) => r.path)], githubToken, github.forgeHooks);
  const remoteUrl = forge.urlOf(remote);
  const repos: Record<string, string> = more.length
    ? { TETHER_REPOS: JSON.stringify(more.map((r) => ({ name: r.name, url: forge.urlOf(r.path) }))) }
    : {};
  const namespace = `e2e-${process.pid}-${++counter}`;
  const logs: string[] = [];
  const kubeconfig = options.kubeconfig ?? inject('kubeconfig');
  const stack = await startStack({
    kubeconfig,
    repoRoot: process.cwd(),
    stateDir,
    namespace,
    repoUrl: remoteUrl,
    githubApiUrl: github.url,
    relayEnv: {
      TWILIO_ACCOUNT_SID: twilio.accountSid,
      TWILIO_AUTH_TOKEN: twilio.authToken,
      TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886',
      TWILIO_API_URL: twilio.url,
      ALLOWED_NUMBERS: numbers.join(','),
      RELAY_PROGRESS_BATCH: '300ms',
      ...repos,
      ...options.relayEnv,
      ...(await options.prepareTwilio?.(twilio)),
    },
    controllerEnv: { TETHER_LEADER_ELECTION: 'false', ...options.controllerEnv },
    keepAlive: options.keepAlive ?? '0',
    // Claude Code in the runner Pods must reach nothing but the scripted model
    podEnv: { ...options.podEnv, ...proxy.env },
    egressEnv: egressSettings(options, (name) =>
      name === 'sample' ? remoteUrl : forge.urlOf(more.find((r) => r.name === name)!.path),
    ),
    runnerSecrets: { ...throughModelProxy(options), ...options.runnerSecrets, GITHUB_TOKEN: githubToken },
    github: local.stack,
    logger: pino({ level: 'warn' }),
    onLine: (component, line) => logs.push(`${component}: ${line}`),
  });
  local.deliverTo(stack.relayUrl);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfig);
  const sessions = new SessionClient(connectionFromKubeConfig(kubeConfig));

  const phone = (number: string) => twilioPhone(twilio, stack.relayUrl, number);

  return {
    stack,
    twilio,
    github,
    ...(local.stack.webhookSecret ? { githubWebhookSecret: local.stack.webhookSecret } : {}),
    ...(local.app ? { githubApp: local.app } : {}),
    remote,
    remoteUrl,
    githubToken,
    stateDir,
    sessions,
    kubeConfig,
    phone,
    logs: () => [...logs],
    async list() {
      const { items } = await sessions.list(namespace);
      return items.sort(byArrival);
    },
    async stop() {
      await stack.stop();
      await Promise.all([twilio.close(), github.close(), proxy.close(), forge.forge.close()]);
      if (process.env.E2E_LOGS) console.log(logs.join('\n'));
      if (proxy.attempts.length)
        throw new Error(`Claude Code tried to reach something besides the model: ${proxy.attempts.join(', ')}`);
    },
  };
}
