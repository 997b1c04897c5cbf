// `make dev`: the whole system on this machine — a local control plane, the Session CRD,
// controller, relay (web chat; Twilio too when its variables are set), the local node agent,
// a sample repository as the remote and a local stand-in for the GitHub API. Every process it
// starts is supervised (local/supervise.ts); the node agent runs inside this process.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import pino from 'pino';
import { startControlPlane } from './control-plane/control-plane.ts';
import { serveLocalRemotes } from './local-remotes.ts';
import { sampleRepoPath } from './sample-repo.ts';
import { stackRepoHosts } from './stack-env.ts';
import { startStack } from './stack.ts';
import { fileVerdict } from './github/ci.ts';
import { repositoriesOf, startLocalGitHub } from './github/local-github.ts';
import { loadDevConfig, repoRoot } from './config.ts';
import { notIsolatedWarning } from './isolation.ts';
import { checkNodeFolders } from './node-agent/folder-checks.ts';
import { formatLine } from './log-lines.ts';
import { passableDir } from './node-agent/identity.ts';

const config = (() => {
  try {
    const loaded = loadDevConfig();
    stackRepoHosts(
      loaded.repoUrl ?? sampleRepoPath(join(loaded.stateDir, 'remote')),
      loaded.relayEnv,
      loaded.repoHosts,
    ); // a list the relay would refuse
    checkNodeFolders(loaded.stateDir, loaded.imageStore);
    return loaded;
  } catch (error) {
    process.stderr.write(`make dev: ${(error as Error).message}\n`);
    return process.exit(2);
  }
})();
const { stateDir } = config;
const print = (component: string, line: string) => process.stdout.write(`${formatLine(component, line)}\n`);
const logger = pino({ level: config.logLevel }, { write: (line: string) => print('node-agent', line.trimEnd()) });

const warning = notIsolatedWarning();
if (warning) process.stderr.write(warning);
print('dev', 'starting the local control plane (the first run builds it: several minutes)…');
passableDir(stateDir, true);
await rm(join(stateDir, 'cluster'), { recursive: true, force: true });
const plane = await startControlPlane({
  dir: join(stateDir, 'cluster'),
  onSupervision: (line) => print('supervisor', line),
});
print('dev', `control plane ready at ${plane.server}`);

// The sample remote, and every local folder given as a repository, are served like a forge: runners
// push with a token (GITHUB_TOKEN, or one made up for this run) and no other process of the machine can.
// Without GITHUB_API_URL, the GitHub stand-in plays GitHub for them: pull requests, its own CI, webhooks
// to the relay, and an App when TETHER_DEV_GITHUB_APP is set.
const githubToken = config.runnerSecrets.GITHUB_TOKEN ?? randomBytes(20).toString('hex');
const local = config.githubApiUrl
  ? undefined
  : await startLocalGitHub({
      token: githubToken,
      stateDir,
      webhooks: config.relayEnv.TETHER_GITHUB_WEBHOOK_SECRET ?? true,
      app: config.githubApp,
      ...ownerOfFolder(config.repoUrl ?? sampleRepoPath(join(stateDir, 'remote'))),
      standIn: { ci: fileVerdict() },
    });
const github = local?.github;

/** The App's account: the owner of the default repository when it is a local folder. */
function ownerOfFolder(url: string): { account?: string } {
  return url.startsWith('/') ? { account: basename(dirname(url)) } : {};
}

const remote = await serveLocalRemotes(stateDir, config.repoUrl, config.relayEnv, githubToken, github?.forgeHooks);
for (const repo of repositoriesOf(remote.folders)) github?.addRepository(repo.owner, repo.name, repo.path);
const repoUrl = remote.repoUrl;

const stack = await startStack({
  kubeconfig: plane.kubeconfig,
  repoRoot,
  stateDir,
  imageStore: config.imageStore,
  repoUrl,
  githubApiUrl: config.githubApiUrl ?? github!.url,
  relayPort: config.relayPort,
  relayEnv: remote.relayEnv,
  controllerEnv: config.controllerEnv,
  egressEnv: config.egressEnv,
  repoHosts: config.repoHosts,
  runnerSecrets: { ...config.runnerSecrets, GITHUB_TOKEN: githubToken },
  ...(local ? { github: local.stack } : {}),
  logger,
  onLine: print,
});

local?.deliverTo(stack.relayUrl);

const agent = config.runnerSecrets.ANTHROPIC_API_KEY
  ? 'Claude Code with the Claude API (ANTHROPIC_API_KEY is set)'
  : 'Claude Code with the scripted model (set ANTHROPIC_API_KEY for the Claude API)';
process.stdout.write(`
  Tether is running.

  Chat:      ${stack.chatUrl}
  Sessions:  KUBECONFIG=${plane.kubeconfig} kubectl get sessions -n ${stack.namespace} -w
  Remote:    ${repoUrl}${remote.path ? ` (the bare repository ${remote.path})` : ''}${
    github
      ? `\n  GitHub:    a local stand-in at ${github.url} (webhooks to the relay; its CI fails while a` +
        ` pull request has .ci-fail)`
      : ''
  }
  Agent:     ${agent}

  Try: "add a farewell function" (the scripted model's demo edits one file), or a scenario
       the model plays, one step per line (Shift+Enter in the chat; grammar in the README):
         script:
         progress: reading the code
         write: NOTES.md = hello
         say: done
  Ctrl-C stops everything.
${warning ? `\n${warning}` : ''}
`);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  print('dev', 'stopping…');
  await stack.stop();
  await github?.close();
  await remote.close();
  await plane.stop();
  process.exit(0);
};
process.on('SIGINT', () => void shutdown());
process.on('SIGTERM', () => void shutdown());
