// Phone to agent: a signed webhook → the first progress message reaching the (fake) Twilio API,
// through the whole local stack `make dev` runs (relay, controller, node agent, runner with the real
// Claude Code and the scripted model). Prints p50/p99 over N runs, a breakdown per stage, and the
// peak RSS of the Claude Code processes.
// Run: npm run bench:first-progress [-- --runs 20]
import { connectionFromKubeConfig } from '../common/kube/connection.ts';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createInformer } from '../common/kube/informer.ts';
import type { Session } from '../common/session/schema.ts';
import { sessionsPath } from '../common/kube/sessions.ts';
import { LABEL_SESSION } from '../common/session/names.ts';
import { startControlPlane } from '../local/control-plane/control-plane.ts';
import { startGitHubStandIn } from '../local/github/stand-in.ts';
import { serveLocalRemote } from '../local/sample-repo.ts';
import { startStack } from '../local/stack.ts';
import { startFakeTwilio } from '../test/fakes/twilio.ts';
import { postWebhook, signedWebhook } from '../test/support/twilio-webhook.ts';
import { machineLoad, percentile, refuseIfBusy } from './machine.ts';
import { atMost, report } from './report.ts';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '20' } } });
const runs = Number(args.runs);
refuseIfBusy();
const loadBefore = machineLoad();

const stateDir = mkdtempSync(join(tmpdir(), 'tether-bench-fp-'));
const plane = await startControlPlane({ dir: join(stateDir, 'cluster') });
const githubToken = randomBytes(20).toString('hex');
const [twilio, github] = await Promise.all([startFakeTwilio(), startGitHubStandIn({ token: githubToken })]);
const remote = await serveLocalRemote(stateDir, undefined, githubToken);
const repoUrl = remote.url;
const phone = '+14155550199';
/** Stage → time (ms since epoch) per Session, from watches and the components' own log lines. */
const marks = new Map<string, Record<string, number>>();
const mark = (session: string, stage: string, at = Date.now()) => {
  const m = marks.get(session) ?? {};
  m[stage] ??= at;
  marks.set(session, m);
};
const LOG_STAGES: Array<[string, RegExp]> = [
  ['runnerReady', /"msg":"runner ready"/],
  ['workspaceReady', /"msg":"workspace ready"/],
  ['claudeStarted', /"msg":"agent started"/],
  ['firstModelTurn', /"msg":"model request"/],
];
const stack = await startStack({
  kubeconfig: plane.kubeconfig,
  repoRoot: process.cwd(),
  stateDir,
  repoUrl,
  githubApiUrl: github.url,
  relayEnv: {
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886',
    TWILIO_API_URL: twilio.url,
    ALLOWED_NUMBERS: phone,
    // Every run is the same phone's; the scripted model's reported cost would spend a day's budget in ~25 runs.
    TETHER_DAILY_BUDGET_USD: '0',
  },
  controllerEnv: { TETHER_LEADER_ELECTION: 'false', TETHER_DAILY_BUDGET_USD: '0' },
  runnerSecrets: { GITHUB_TOKEN: githubToken },
  logger: pino({ level: 'warn' }),
  onLine: (component, line) => {
    const pod = /^runner (.+)-runner$/.exec(component)?.[1];
    if (!pod) return;
    for (const [stage, pattern] of LOG_STAGES)
      if (pattern.test(line)) mark(pod, stage, Number(/"time":(\d+)/.exec(line)?.[1] ?? Date.now()));
  },
});

const kc = new KubeConfig();
kc.loadFromFile(plane.kubeconfig);
const log = pino({ level: 'warn' });
const sessions = createInformer<Session>({
  kube: connectionFromKubeConfig(kc),
  path: sessionsPath(stack.namespace),
  logger: log,
});
sessions.onChange((_key, s) => {
  if (!s) return;
  const name = s.metadata.name!;
  mark(name, 'sessionCreated');
  if (s.status?.phase) mark(name, s.status.phase);
  if (s.status?.progress?.length) mark(name, 'progressInStatus');
});
const pods = createInformer<V1Pod>({
  kube: connectionFromKubeConfig(kc),
  path: `/api/v1/namespaces/${stack.runnerNamespace}/pods`,
  logger: log,
});
pods.onChange((_key, p) => {
  const session = p?.metadata?.labels?.[LABEL_SESSION];
  if (!session) return;
  mark(session, 'podCreated');
  if (p.status?.phase === 'Running') mark(session, 'podRunning');
});
await Promise.all([sessions.start(), pods.start()]);

/** Peak RSS (KiB) of processes whose command line mentions the Claude Code binary, sampled every 100 ms. */
let claudePeakKiB = 0;
const sampler = setInterval(() => {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('claude-agent-sdk')) continue;
      const rss = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      claudePeakKiB = Math.max(claudePeakKiB, rss);
    } catch {
      // the process ended between listing and reading
    }
  }
}, 100);

const totals: number[] = [];
for (let i = 0; i < runs; i++) {
  const before = twilio.to(phone).length;
  const sent = Date.now();
  const hook = signedWebhook(twilio.authToken, `${stack.relayUrl}/webhook`, {
    from: phone,
    body: `script:\nprogress: first milestone ${i}\nsay: done`,
  });
  const response = await postWebhook(`${stack.relayUrl}/webhook`, hook);
  if (response.status !== 200) throw new Error(`webhook answered ${response.status}`);
  let name: string | undefined;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
    name ??= sessions.list().find((s) => s.spec.prompt.includes(`first milestone ${i}`))?.metadata.name;
    const got = twilio
      .to(phone)
      .slice(before)
      .find((m) => m.body.includes(`first milestone ${i}`));
    if (got && name) {
      mark(name, 'sent', sent);
      mark(name, 'onPhone', got.at);
      totals.push(got.at - sent);
      break;
    }
  }
  if (totals.length !== i + 1) throw new Error(`run ${i}: no progress message within 60 s`);
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    if (sessions.get(`${stack.namespace}/${name}`)?.status?.phase === 'Succeeded') break;
  }
}
clearInterval(sampler);

const STAGES = [
  'sent',
  'sessionCreated',
  'podCreated',
  'podRunning',
  'runnerReady',
  'Working',
  'workspaceReady',
  'claudeStarted',
  'firstModelTurn',
  'progressInStatus',
  'onPhone',
];
const LABELS: Record<string, string> = {
  sessionCreated: 'relay: webhook → Session',
  podCreated: 'controller: Session → Pod',
  podRunning: 'node: Pod → process started',
  runnerReady: 'runner start (imports, config)',
  Working: 'runner: ready → Working written',
  workspaceReady: 'runner: checkout (git) ready',
  claudeStarted: 'Claude Code spawned',
  firstModelTurn: 'Claude Code start → first model request',
  progressInStatus: 'first turn → progress in status',
  onPhone: 'relay: status → phone',
};
console.log(`\nfirst progress on the phone over ${runs} runs (load before ${loadBefore}, after ${machineLoad()}):`);
console.log(
  `  total                                      p50 ${percentile(totals, 50)} ms   ` +
    `p99 ${percentile(totals, 99)} ms   (target p50 ≤ 2000, p99 ≤ 4000)`,
);
for (let s = 1; s < STAGES.length; s++) {
  const deltas = [...marks.values()].flatMap((m) => {
    const prev = STAGES.slice(0, s)
      .reverse()
      .find((p) => m[p] !== undefined);
    return m[STAGES[s]!] !== undefined && prev ? [m[STAGES[s]!]! - m[prev]!] : [];
  });
  if (deltas.length)
    console.log(
      `  ${LABELS[STAGES[s]!]!.padEnd(42)} p50 ${percentile(deltas, 50)} ms   p99 ${percentile(deltas, 99)} ms`,
    );
}
console.log(`  Claude Code peak RSS                       ${(claudePeakKiB / 1024).toFixed(0)} MiB`);
console.log(`  git: ${execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()}`);
report([
  atMost('phone → first progress p50 (make dev, real Claude Code)', percentile(totals, 50), 2000, 'ms'),
  atMost('phone → first progress p99', percentile(totals, 99), 4000, 'ms'),
]);

sessions.stop();
pods.stop();
await stack.stop();
await Promise.all([twilio.close(), github.close(), remote.close()]);
await plane.stop();
process.exit(0);
