// Helpers for runner tests: a local bare git remote, the runner as a real child process, and the
// controller's and relay's parts (mark Starting, append decisions) played by the test.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { sessionName, workspaceName } from '../../common/session/names.ts';
import type { Decision, Phase, Session, SessionSpec } from '../../common/session/schema.ts';
import { transition } from '../../common/session/state-machine.ts';
import { startGitHubStandIn, type GitHubStandIn } from '../../local/github/stand-in.ts';
import { adminKubeConfig, createNamespace, deleteNamespace, installSessionCrd, sessionClient } from './cluster.ts';
import { eventually } from './eventually.ts';
import { startRefusingProxy, type RefusingProxy } from './refusing-proxy.ts';
import { testPhoneHash } from './phone-hash.ts';

export const PHONE = '+14155550123';
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    },
  });

/** A bare repository at <dir>/remotes/acme/web.git with one commit on main: a README and `files`. */
export function makeRemote(
  root = mkdtempSync(join(tmpdir(), 'tether-remote-')),
  files: Record<string, string> = {},
): { url: string; root: string; git: (...args: string[]) => string } {
  const url = join(root, 'remotes', 'acme', 'web.git');
  mkdirSync(url, { recursive: true });
  git(url, 'init', '--quiet', '--bare', '--initial-branch=main');
  const seed = join(root, 'seed');
  mkdirSync(seed);
  git(seed, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(join(seed, 'README.md'), '# web\n');
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(seed, path)), { recursive: true });
    writeFileSync(join(seed, path), content);
  }
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'initial');
  git(seed, 'push', '--quiet', url, 'main');
  return { url, root, git: (...args: string[]) => git(url, ...args) };
}

export interface RunnerProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  workspace: string;
  /** The runner's private git folder (TETHER_GIT_STORE), outside the workspace as in a Pod. */
  gitStore: string;
}

export function startRunner(options: {
  kubeconfig: string;
  namespace: string;
  name: string;
  workspace?: string;
  env?: Record<string, string>;
}): RunnerProcess {
  const workspace = options.workspace ?? mkdtempSync(join(tmpdir(), 'tether-ws-'));
  const gitStore = mkdtempSync(join(tmpdir(), 'tether-git-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    KUBECONFIG: options.kubeconfig,
    TETHER_SESSION_NAME: options.name,
    TETHER_SESSION_NAMESPACE: options.namespace,
    TETHER_WORKSPACE: workspace,
    HOME: join(gitStore, 'home'),
    TETHER_AGENT_HOME: join(workspace, 'home'),
    TETHER_GIT_STORE: gitStore,
    // The tests' remotes are bare repositories under the temporary folder (makeRemote).
    TETHER_REPO_HOSTS: tmpdir(),
    ...options.env,
  };
  const child = spawn(process.execPath, ['runner-image/main.ts'], {
    cwd: join(import.meta.dirname, '../..'),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const runner = { child, output: () => output, exited, workspace, gitStore };
  runners.set(options.name, runner);
  return runner;
}

/** The last runner started for each Session name: a wait that times out shows what it printed. */
const runners = new Map<string, RunnerProcess>();
const OUTPUT_TAIL_CHARS = 8000;

function whyNotMet(name: string, session: Session | undefined): string {
  const status = `condition not met; status ${JSON.stringify(session?.status ?? null)}`;
  const runner = runners.get(name);
  if (!runner) return status;
  const exit = runner.child.exitCode ?? runner.child.signalCode;
  return (
    `${status}\nrunner ${exit === null ? 'running' : `exited (${exit})`}; its output:\n` +
    runner.output().slice(-OUTPUT_TAIL_CHARS)
  );
}

export function specFor(prompt: string, repoUrl: string, extra: Partial<SessionSpec> = {}): SessionSpec {
  return {
    phone: PHONE,
    prompt,
    repo: { url: repoUrl, baseBranch: 'main' },
    workspace: workspaceName(testPhoneHash(PHONE)),
    ...extra,
  };
}

/** Creates the Session and moves it to Starting as the controller would. */
export async function createStartedSession(
  sessions: SessionClient,
  namespace: string,
  spec: SessionSpec,
): Promise<string> {
  const name = sessionName(testPhoneHash(PHONE));
  await sessions.create(namespace, name, spec);
  const next = transition(undefined, { type: 'PodCreated' });
  if (!next.ok) throw new Error(next.error);
  await sessions.patchStatus(namespace, name, {
    phase: next.phase,
    podName: `${name}-runner`,
    startTime: new Date().toISOString(),
  });
  return name;
}

export async function waitFor(
  sessions: SessionClient,
  namespace: string,
  name: string,
  check: (s: Session) => boolean,
  timeoutMs = 60_000,
): Promise<Session> {
  return eventually(
    async () => {
      const session = await sessions.get(namespace, name);
      if (!session || !check(session)) throw new Error(whyNotMet(name, session));
      return session;
    },
    timeoutMs,
    50,
  );
}

export const waitForPhase = (
  sessions: SessionClient,
  namespace: string,
  name: string,
  phase: Phase,
  timeoutMs?: number,
) => waitFor(sessions, namespace, name, (s) => s.status?.phase === phase, timeoutMs);

/** Waits for an open request of this kind and answers it as the relay would (appending a decision). */
export async function answer(
  sessions: SessionClient,
  namespace: string,
  name: string,
  kind: string,
  decision: Omit<Decision, 'requestId' | 'at'>,
): Promise<Session> {
  const open = (s: Session) =>
    s.status?.phase === 'AwaitingApproval' &&
    s.status.pending?.kind === kind &&
    !s.spec.decisions?.some((d) => d.requestId === s.status?.pending?.id);
  const session = await waitFor(sessions, namespace, name, open);
  const decisions = [
    ...(session.spec.decisions ?? []),
    { ...decision, requestId: session.status!.pending!.id, at: new Date().toISOString() },
  ];
  await sessions.patch(namespace, name, { spec: { decisions } });
  return session;
}

export interface RunnerTestbed {
  kc: KubeConfig;
  ns: string;
  sessions: SessionClient;
  github: GitHubStandIn;
  /** Claude Code must reach nothing but the model: every other address goes here and is refused. */
  proxy: RefusingProxy;
  /** The runner's usual environment (fake GitHub, the refusing proxy) plus `extra`. */
  env(extra?: Record<string, string>): Record<string, string>;
  /** A fresh remote, a Session in Starting, and the runner process for it. */
  run(
    prompt: string,
    env?: Record<string, string>,
    extra?: Partial<SessionSpec>,
    files?: Record<string, string>,
  ): Promise<{ name: string; runner: RunnerProcess; remote: ReturnType<typeof makeRemote>; repo: string }>;
}

/** beforeAll/afterAll for a runner test file: CRD, a namespace, a fake GitHub, the refusing proxy. */
export function useRunnerTestbed(prefix: string): RunnerTestbed {
  const bed = {} as RunnerTestbed;
  beforeAll(async () => {
    bed.kc = adminKubeConfig();
    await installSessionCrd(bed.kc);
    bed.ns = await createNamespace(bed.kc, prefix);
    bed.sessions = sessionClient(bed.kc);
    bed.github = await startGitHubStandIn();
    bed.proxy = await startRefusingProxy();
  });
  afterAll(async () => {
    await bed.github?.close();
    await bed.proxy?.close();
    expect(bed.proxy?.attempts, 'Claude Code tried to reach something besides the model').toEqual([]);
    if (bed.ns) await deleteNamespace(bed.kc, bed.ns);
  });
  bed.env = (extra = {}) => ({ GITHUB_API_URL: bed.github.url, ...bed.proxy.env, ...extra });
  bed.run = async (prompt, env = {}, extra = {}, files = {}) => {
    const remote = makeRemote(undefined, files);
    const name = await createStartedSession(bed.sessions, bed.ns, specFor(prompt, remote.url, extra));
    const runner = startRunner({ kubeconfig: inject('kubeconfig'), namespace: bed.ns, name, env: bed.env(env) });
    return { name, runner, remote, repo: join(runner.workspace, 'repo') };
  };
  return bed;
}

/** A live (non-zombie) process and its live descendants, read from /proc. */
export function processTree(root: number): number[] {
  const parents = new Map(
    readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .flatMap((pid) => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
          const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          return state === 'Z' ? [] : [[Number(pid), Number(ppid)] as const];
        } catch {
          return [];
        }
      }),
  );
  const tree = parents.has(root) ? [root] : [];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/** SIGKILLs a process and everything under it, as the kubelet kills a container; one already gone is passed over. */
export function killTree(root: number): void {
  for (const pid of processTree(root)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}

export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false;
  }
};
