// A repository with a long, heavy history through the whole local stack: phone → first progress for the first command
// (the workspace's git store empty: the whole history fetched) and for the next ones (each in a new runner Pod, the
// store kept on its claim: only the new commit fetched), and the same next command with the store emptied first (what
// every command paid while the store was an emptyDir of the Pod). The repository (default 100,000 commits, ~1 GiB
// packed: each commit rewrites one of 4,000 files with incompressible bytes) is generated once with `git fast-import`
// and kept under ~/.cache/tether/bench-repos, never in the clone; the forge serves a throwaway repository borrowing
// its objects, which each next command moves by one commit. Opt-in (`make bench BENCH_ARGS=--big`): generation is slow.
// Run: node bench/git-history.ts [--commits 100000] [--mib 1024] [--runs 3]
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { connectionFromKubeConfig } from '../common/kube/connection.ts';
import { createInformer } from '../common/kube/informer.ts';
import { sessionsPath } from '../common/kube/sessions.ts';
import type { Session } from '../common/session/schema.ts';
import { startControlPlane } from '../local/control-plane/control-plane.ts';
import { startGitHubStandIn } from '../local/github/stand-in.ts';
import { serveRemotes } from '../local/sample-repo.ts';
import { startStack } from '../local/stack.ts';
import { startFakeTwilio } from '../test/fakes/twilio.ts';
import { postWebhook, signedWebhook } from '../test/support/twilio-webhook.ts';
import { inheritedEnv } from './config.ts';
import { machineLoad, percentile, refuseIfBusy } from './machine.ts';
import { atMost, report } from './report.ts';

const { values: args } = parseArgs({
  options: {
    commits: { type: 'string', default: '100000' },
    mib: { type: 'string', default: '1024' },
    runs: { type: 'string', default: '3' },
  },
});
const shape = { commits: Number(args.commits), mib: Number(args.mib) };
const RUNS = Number(args.runs);
/** Files of the tip's tree, 100 to a folder. */
const FILES = 4000;
const EPOCH = 1_700_000_000;
const COMMAND_TIMEOUT_MS = 600_000;

/** The commits' stream for fast-import: commit i rewrites file i mod FILES. */
async function writeHistory(input: NodeJS.WritableStream): Promise<void> {
  const bytes = Math.max(64, Math.floor((shape.mib * 1024 * 1024) / shape.commits));
  for (let i = 0; i < shape.commits; i++) {
    const message = `change ${i}\n`;
    const data = randomBytes(bytes);
    const head =
      `commit refs/heads/main\ncommitter Bench <bench@example.com> ${EPOCH + i} +0000\n` +
      `data ${Buffer.byteLength(message)}\n${message}` +
      `M 100644 inline src/d${Math.floor((i % FILES) / 100)}/f${i % FILES}.bin\ndata ${data.length}\n`;
    if (!(input.write(head) && input.write(data) && input.write('\n'))) await once(input, 'drain');
    if (i > 0 && i % 10_000 === 0) process.stderr.write(`  generated ${i} of ${shape.commits} commits\n`);
  }
  input.end('done\n');
}

/** The cached bare repository of this shape, generated now when missing. */
async function historyRepo(): Promise<string> {
  const dir = join(homedir(), '.cache', 'tether', 'bench-repos', 'history');
  const path = join(dir, `c${shape.commits}-m${shape.mib}.git`);
  if (existsSync(join(path, 'HEAD'))) return path;
  mkdirSync(dir, { recursive: true });
  const making = `${path}.making`;
  rmSync(making, { recursive: true, force: true });
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', making]);
  process.stderr.write(`generating ${path} (${shape.commits} commits, ~${shape.mib} MiB), once\n`);
  const child = spawn('git', ['fast-import', '--quiet', '--done'], {
    env: { ...inheritedEnv(), GIT_DIR: making },
    stdio: ['pipe', 'inherit', 'inherit'],
  });
  const exited = once(child, 'exit');
  await writeHistory(child.stdin);
  const [code] = (await exited) as [number | null];
  if (code !== 0) throw new Error(`git fast-import exited with ${code}`);
  renameSync(making, path);
  return path;
}

const cached = await historyRepo();
refuseIfBusy();
const loadBefore = machineLoad();
const stateDir = mkdtempSync(join(tmpdir(), 'tether-bench-history-'));
const git = (gitDir: string, ...rest: string[]) =>
  execFileSync('git', rest, { env: { ...inheritedEnv(), GIT_DIR: gitDir }, encoding: 'utf8' }).trim();
// The served repository borrows the cached one's objects: moving it never changes the cache.
const remote = join(stateDir, 'remote', 'acme', 'history.git');
execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', remote]);
writeFileSync(join(remote, 'objects', 'info', 'alternates'), `${join(cached, 'objects')}\n`);
git(remote, 'update-ref', 'refs/heads/main', git(cached, 'rev-parse', 'main'));
const moveUpstream = (n: number) => {
  const commit = git(remote, 'commit-tree', '-p', 'main', '-m', `upstream ${n}`, 'main^{tree}');
  git(remote, 'update-ref', 'refs/heads/main', commit);
};

const plane = await startControlPlane({ dir: join(stateDir, 'cluster') });
const token = randomBytes(20).toString('hex');
const [twilio, github] = await Promise.all([startFakeTwilio(), startGitHubStandIn({ token })]);
const forge = await serveRemotes(join(stateDir, 'remote'), [remote], token);
const phone = '+14155550198';
const stack = await startStack({
  kubeconfig: plane.kubeconfig,
  repoRoot: process.cwd(),
  stateDir,
  repoUrl: forge.urlOf(remote),
  githubApiUrl: github.url,
  relayEnv: {
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886',
    TWILIO_API_URL: twilio.url,
    ALLOWED_NUMBERS: phone,
    TETHER_DAILY_BUDGET_USD: '0',
  },
  // Each command on a new Pod (no live runner): what is measured is the store outliving it.
  controllerEnv: { TETHER_LEADER_ELECTION: 'false', TETHER_DAILY_BUDGET_USD: '0', TETHER_RUNNER_KEEP_ALIVE: '0' },
  runnerSecrets: { GITHUB_TOKEN: token },
  logger: pino({ level: 'warn' }),
});
const kc = new KubeConfig();
kc.loadFromFile(plane.kubeconfig);
const sessions = createInformer<Session>({
  kube: connectionFromKubeConfig(kc),
  path: sessionsPath(stack.namespace),
  logger: pino({ level: 'warn' }),
});
await sessions.start();

/** Phone → the command's first progress on the phone (ms); waits for its Session to succeed. */
async function command(label: string): Promise<number> {
  const before = twilio.to(phone).length;
  const sent = Date.now();
  const body = `script:\nprogress: ${label} started\nsay: done`;
  const response = await postWebhook(
    `${stack.relayUrl}/webhook`,
    signedWebhook(twilio.authToken, `${stack.relayUrl}/webhook`, { from: phone, body }),
  );
  if (response.status !== 200) throw new Error(`webhook answered ${response.status}`);
  let took: number | undefined;
  for (const deadline = Date.now() + COMMAND_TIMEOUT_MS; Date.now() < deadline; await sleep(50)) {
    const got = twilio
      .to(phone)
      .slice(before)
      .find((m) => m.body.includes(`${label} started`));
    took ??= got && got.at - sent;
    const session = sessions.list().find((s) => s.spec.prompt.includes(`${label} started`));
    if (took !== undefined && session?.status?.phase === 'Succeeded') return took;
    if (session?.status?.phase === 'Failed') throw new Error(`${label}: ${session.status.result?.message}`);
  }
  throw new Error(`${label}: no progress and success within ${COMMAND_TIMEOUT_MS / 1000} s`);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const first = await command('first');
const workspace = sessions.list()[0]!.spec.workspace;
const next: number[] = [];
for (let i = 0; i < RUNS; i++) {
  moveUpstream(i);
  next.push(await command(`next ${i}`));
}
// The store emptied before the command: a Pod whose store starts empty, as with an emptyDir.
rmSync(join(stateDir, 'volumes', stack.runnerNamespace, `${workspace}.git`), { recursive: true, force: true });
moveUpstream(RUNS);
const emptied = await command('store emptied');

const name = `git history (${shape.commits} commits, ${shape.mib} MiB)`;
console.log(`\n${name}, phone → first progress (load before ${loadBefore}, after ${machineLoad()}):`);
console.log(`  first command (store empty)            ${first} ms`);
console.log(`  next command, store kept               p50 ${percentile(next, 50)} ms   max ${Math.max(...next)} ms`);
console.log(`  next command, store emptied (emptyDir) ${emptied} ms`);
report([
  atMost(`${name}: first command → first progress`, first, 120_000, 'ms'),
  atMost(`${name}: next command (new Pod, store kept) → first progress p50`, percentile(next, 50), 5000, 'ms'),
]);

sessions.stop();
await stack.stop();
await Promise.all([twilio.close(), github.close(), forge.forge.close()]);
await plane.stop();
process.exit(0);
