// Attack (fails today; passes once fixed): in a runner Pod the supervisor has no KUBECONFIG and its
// HOME is on the agent's volume (/workspace/home, controller/builders.ts). The kube connection is
// searched as client-node does — $KUBECONFIG, then $HOME/.kube/config, then the service account —
// so a kubeconfig the agent left in its HOME in one Session is what the next Session's supervisor
// loads at start. With an `exec` credential plugin client-node runs the agent's command as the
// supervisor, with its environment (GITHUB_TOKEN, the model key) and its token files.
// The runner runs here as its Pod runs it (RUNNER_COMMAND, the Pod's environment), as a process.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RUNNER_COMMAND } from '../../controller/builders.ts';
import { filesContaining } from '../support/files.ts';

const GITHUB_CANARY = 'ghp_canaryKUBECONFIGhome0123456789abc';
const ANTHROPIC_CANARY = 'sk-ant-canary-KUBECONFIG-home-0123456789';
const repoRoot = join(import.meta.dirname, '../..');
let runner: ChildProcess | undefined;
afterEach(() => {
  runner?.kill('SIGKILL');
});

/** What the agent leaves in its HOME: a kubeconfig whose user is an exec plugin of its own. */
function plantKubeconfig(home: string): void {
  mkdirSync(join(home, '.kube'), { recursive: true });
  const credential = JSON.stringify({
    apiVersion: 'client.authentication.k8s.io/v1beta1',
    kind: 'ExecCredential',
    status: { token: 'x' },
  });
  writeFileSync(
    join(home, '.kube', 'config'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'c',
      clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:9', 'insecure-skip-tls-verify': true } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      users: [
        {
          name: 'u',
          user: {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1beta1',
              command: '/bin/sh',
              interactiveMode: 'Never',
              args: ['-c', `env > "$HOME/exec-leak.txt"; echo '${credential}'`],
            },
          },
        },
      ],
    }),
  );
}

describe('attack: a kubeconfig in the agent-writable HOME of the supervisor', () => {
  it(
    "the runner started with its Pod's environment runs no command of the agent's and leaks no canary onto the " +
      'workspace',
    { timeout: 60_000 },
    async () => {
      const root = mkdtempSync(join(tmpdir(), 'tether-kubeconfig-'));
      const workspace = join(root, 'workspace');
      const home = join(workspace, 'home');
      plantKubeconfig(home);
      const [node, ...args] = RUNNER_COMMAND;
      const output: string[] = [];
      runner = spawn(
        node === 'node' ? process.execPath : node!,
        args.map((a) => a.replace('/app/', `${repoRoot}/`)),
        {
          env: {
            PATH: process.env.PATH,
            HOME: home,
            TETHER_WORKSPACE: workspace,
            TETHER_GIT_STORE: join(root, 'git-store'),
            TETHER_SESSION_NAME: 's1',
            TETHER_SESSION_NAMESPACE: 'tether',
            TETHER_RELAY_TOKEN_FILE: join(root, 'relay-token'),
            KUBERNETES_SERVICE_HOST: '127.0.0.1',
            KUBERNETES_SERVICE_PORT: '9',
            GITHUB_TOKEN: GITHUB_CANARY,
            ANTHROPIC_API_KEY: ANTHROPIC_CANARY,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      runner.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
      runner.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
      // The runner's first API call comes within seconds of its start, whichever connection it chose.
      await new Promise((resolve) => {
        const poll = setInterval(() => {
          if (
            existsSync(join(home, 'exec-leak.txt')) ||
            output.join('').includes('ECONNREFUSED') ||
            runner!.exitCode !== null
          )
            resolve(clearInterval(poll));
        }, 100);
        setTimeout(() => resolve(clearInterval(poll)), 20_000);
      });
      const leaked = filesContaining(workspace, [GITHUB_CANARY, ANTHROPIC_CANARY]);
      expect(
        { execRan: existsSync(join(home, 'exec-leak.txt')), canariesIn: leaked },
        output.join('').slice(-2000),
      ).toEqual({ execRan: false, canariesIn: [] });
    },
  );
});
