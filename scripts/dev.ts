// `make dev`: the whole system on this machine — a local control plane, the Session CRD,
// controller, relay (web chat; Twilio too when its variables are set), the local node agent,
// a sample repository as the remote and a local stand-in for the GitHub API.
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { startControlPlane } from '../test/cluster/control-plane.ts';
import { ensureSampleRepo } from '../test/cluster/sample-repo.ts';
import { startStack } from '../test/cluster/stack.ts';
import { startFakeGitHub } from '../test/fakes/github.ts';
import { formatLine } from './log-lines.ts';

const env = process.env;
const repoRoot = resolve(import.meta.dirname, '..');
const stateDir = resolve(env.TETHER_STATE_DIR ?? join(repoRoot, '.tether-state'));
const print = (component: string, line: string) => process.stdout.write(`${formatLine(component, line)}\n`);
const logger = pino({ level: env.LOG_LEVEL ?? 'info' }, { write: (line: string) => print('node-agent', line.trimEnd()) });

print('dev', 'starting the local control plane (the first run builds it: several minutes)…');
await rm(join(stateDir, 'cluster'), { recursive: true, force: true });
const plane = await startControlPlane({ dir: join(stateDir, 'cluster') });
print('dev', `control plane ready at ${plane.server}`);

const github = env.GITHUB_API_URL ? undefined : await startFakeGitHub();
const repoUrl = env.TETHER_REPO_URL || (await ensureSampleRepo(join(stateDir, 'remote')));
const passThrough = (names: string[]) => Object.fromEntries(names.filter((n) => env[n]).map((n) => [n, env[n]!]));

const stack = await startStack({
  kubeconfig: plane.kubeconfig, repoRoot, stateDir, repoUrl,
  githubApiUrl: env.GITHUB_API_URL || github!.url,
  relayPort: Number(env.TETHER_DEV_PORT || 8080),
  relayEnv: passThrough(['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_WHATSAPP_FROM', 'TWILIO_API_URL', 'ALLOWED_NUMBERS', 'PUBLIC_URL']),
  runnerSecrets: passThrough(['ANTHROPIC_API_KEY', 'GITHUB_TOKEN']),
  logger, onLine: print,
});

const agent = env.ANTHROPIC_API_KEY ? 'claude (ANTHROPIC_API_KEY is set)' : 'the scripted agent (set ANTHROPIC_API_KEY for Claude Code)';
process.stdout.write(`
  Tether is running.

  Chat:      ${stack.chatUrl}
  Sessions:  KUBECONFIG=${plane.kubeconfig} kubectl get sessions -n ${stack.namespace} -w
  Remote:    ${repoUrl}${github ? `\n  PRs:       recorded by a local GitHub stand-in at ${github.url}` : ''}
  Agent:     ${agent}

  Try: "add a farewell function" (the built-in demo edits one file), or a scenario,
       one step per line (Shift+Enter in the chat; grammar in the README):
         script:
         progress: reading the code
         write: NOTES.md = hello
         say: done
  Ctrl-C stops everything.

`);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  print('dev', 'stopping…');
  await stack.stop();
  await github?.close();
  await plane.stop();
  process.exit(0);
};
process.on('SIGINT', () => void shutdown());
process.on('SIGTERM', () => void shutdown());
