// Phone to agent: a signed webhook → the first progress message reaching the (fake) Twilio API,
// through the whole local stack `make dev` runs (relay, controller with a runner keep-alive, node agent,
// runner with the real Claude Code and the scripted model). Each round is a phone's first command after a
// quiet spell (no live runner Pod: cold) and then its follow-up a few seconds later (its runner Pod live:
// warm); then runs whose runner Pod is deleted mid-run (bench/runner-lost.ts). Prints p50/p99 of each, a
// breakdown per stage, and the peak RSS of the Claude Code processes.
// Run: npm run bench:first-progress [-- --runs 10 --gap 3000 --lost 5 --log <file: every component's output>]
import { connectionFromKubeConfig } from '../common/kube/connection.ts';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
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
import { sleep, until } from './async.ts';
import { StageMarks } from './first-progress-stages.ts';
import { machineLoad, percentile, refuseIfBusy } from './machine.ts';
import { atMost, report, type Row } from './report.ts';
import { lostRuns, type Command } from './runner-lost.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    gap: { type: 'string', default: '3000' },
    lost: { type: 'string', default: '5' },
    log: { type: 'string' },
  },
});
const [runs, gapMs, lostCount] = [Number(args.runs), Number(args.gap), Number(args.lost)];
/** The chart's default: a follow-up a few seconds after its command always finds the Pod live. */
const KEEP_ALIVE = '10m';
refuseIfBusy();
const loadBefore = machineLoad();

const stateDir = mkdtempSync(join(tmpdir(), 'tether-bench-fp-'));
const plane = await startControlPlane({ dir: join(stateDir, 'cluster') });
const githubToken = randomBytes(20).toString('hex');
const [twilio, github] = await Promise.all([startFakeTwilio(), startGitHubStandIn({ token: githubToken })]);
const remote = await serveLocalRemote(stateDir, undefined, githubToken);
const phone = '+14155550199';
const stages = new StageMarks();
const stack = await startStack({
  kubeconfig: plane.kubeconfig,
  repoRoot: process.cwd(),
  stateDir,
  repoUrl: remote.url,
  githubApiUrl: github.url,
  relayEnv: {
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886',
    TWILIO_API_URL: twilio.url,
    ALLOWED_NUMBERS: phone,
    // Every run is the same phone's; the scripted model's reported cost would spend a day's budget in ~25 runs.
    TETHER_DAILY_BUDGET_USD: '0',
    // A run's later progress lines reach the phone 0.3 s after they are written (the e2e tests' setting; by
    // default they wait for a 15 s batch): the lost-Pod runs time the restart line on the phone.
    RELAY_PROGRESS_BATCH: '300ms',
  },
  controllerEnv: {
    TETHER_LEADER_ELECTION: 'false',
    TETHER_DAILY_BUDGET_USD: '0',
    TETHER_RUNNER_KEEP_ALIVE: KEEP_ALIVE,
  },
  runnerSecrets: { GITHUB_TOKEN: githubToken },
  logger: pino({ level: 'warn' }),
  onLine: (component, line) => {
    stages.onLine(component, line);
    if (args.log) appendFileSync(args.log, `${component} ${line}\n`);
  },
});

const kc = new KubeConfig();
kc.loadFromFile(plane.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const log = pino({ level: 'warn' });
const sessions = createInformer<Session>({
  kube: connectionFromKubeConfig(kc),
  path: sessionsPath(stack.namespace),
  logger: log,
});
sessions.onChange((_key, s) => s && stages.onSession(s));
const pods = createInformer<V1Pod>({
  kube: connectionFromKubeConfig(kc),
  path: `/api/v1/namespaces/${stack.runnerNamespace}/pods`,
  logger: log,
});
pods.onChange((_key, p) => p && stages.onPod(p.metadata?.labels?.[LABEL_SESSION], p.status?.phase === 'Running'));
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

const sessionOf = (tag: string) => sessions.list().find((s) => s.spec.prompt.includes(tag));
const session = (name: string) => sessions.get(`${stack.namespace}/${name}`);

/** One command from the phone: sent → its first progress on the phone (the tag's line). */
const command: Command = async (tag, rest = 'say: done') => {
  const before = twilio.to(phone).length;
  const sent = Date.now();
  const hook = signedWebhook(twilio.authToken, `${stack.relayUrl}/webhook`, {
    from: phone,
    body: `script:\nprogress: ${tag}\n${rest}`,
  });
  const response = await postWebhook(`${stack.relayUrl}/webhook`, hook);
  if (response.status !== 200) throw new Error(`webhook answered ${response.status}`);
  let name: string | undefined;
  let onPhone: number | undefined;
  await until(
    () => {
      name ??= sessionOf(tag)?.metadata.name;
      onPhone ??= twilio
        .to(phone)
        .slice(before)
        .find((m) => m.body.includes(tag))?.at;
      return Boolean(name && onPhone);
    },
    60_000,
    `${tag}: its first progress on the phone`,
    20,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; its Session ${name}: ${JSON.stringify(name && session(name)?.status)}`);
  });
  stages.mark(name!, 'sent', sent);
  stages.mark(name!, 'onPhone', onPhone);
  return { name: name!, ms: onPhone! - sent };
};
const ended = (name: string) => until(() => session(name)?.status?.phase === 'Succeeded', 60_000, `${name} done`);

/** Every runner Pod deleted and gone: the phone's next command starts cold (as after its keep-alive). */
async function noLivePod(): Promise<void> {
  for (const pod of pods.list())
    await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: stack.runnerNamespace });
  await until(() => pods.list().length === 0, 60_000, 'runner Pods gone', 50);
}

type Run = { name: string; ms: number };

/** Rounds of a first command (cold) and its follow-up (warm, its runner Pod live). */
async function rounds(): Promise<Run[]> {
  const all: Run[] = [];
  for (let i = 0; i < runs; i++) {
    await noLivePod();
    const cold = await command(`first command ${i}`);
    await ended(cold.name);
    // The follow-up comes gapMs after the run ended, and not before its runner waits for it (at most 30 s more).
    const [pod, sent] = [session(cold.name)?.status?.podName ?? '', stages.marks.get(cold.name)!.sent!];
    await sleep(gapMs);
    await until(() => (stages.idleSince.get(pod) ?? 0) > sent, 30_000, 'the runner idle').catch(() => undefined);
    const warm = await command(`follow-up ${i}`);
    await ended(warm.name);
    all.push(cold, warm);
  }
  return all;
}

async function measure(): Promise<Row[]> {
  const all = await rounds();
  const started = (r: Run) => session(r.name)?.status?.runnerStart;
  const lost = await lostRuns({
    count: lostCount,
    command,
    core,
    session,
    runnerNamespace: stack.runnerNamespace,
    messagesSince: (at) => twilio.to(phone).filter((m) => m.at >= at),
  });
  const rows: Row[] = [];
  const group = (title: string, group: Run[], p50: number, p99: number) => {
    const ms = group.map((r) => r.ms);
    console.log(
      `  ${title} (${group.length} runs)`.padEnd(45) + `p50 ${percentile(ms, 50)} ms   p99 ${percentile(ms, 99)} ms`,
    );
    console.log(stages.breakdown(group.map((r) => r.name)).join('\n'));
    if (!group.length) return;
    rows.push(atMost(`phone → first progress, ${title} p50`, percentile(ms, 50), p50, 'ms'));
    rows.push(atMost(`phone → first progress, ${title} p99`, percentile(ms, 99), p99, 'ms'));
  };
  console.log(
    `\nphone → first progress (load before ${loadBefore}, after ${machineLoad()}; keep-alive ${KEEP_ALIVE}):`,
  );
  const warm = all.filter((r) => started(r) === 'warm');
  group(
    'first command, cold',
    all.filter((r) => started(r) !== 'warm'),
    1500,
    4000,
  );
  group(`follow-up after ${gapMs} ms, warm`, warm, 300, 800);
  console.log(`  ${runs - warm.length} of ${runs} follow-ups started cold`);
  const resets = stages.resetMs;
  console.log(
    `  agent container reset between Sessions      p50 ${percentile(resets, 50)} ms   p99 ${percentile(resets, 99)} ms`,
  );
  console.log(`  Claude Code peak RSS                       ${(claudePeakKiB / 1024).toFixed(0)} MiB`);
  console.log(`  git: ${execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()}`);
  return [...rows, ...lost];
}

try {
  report(await measure());
} finally {
  clearInterval(sampler);
  sessions.stop();
  pods.stop();
  await stack.stop();
  await Promise.all([twilio.close(), github.close(), remote.close()]);
  await plane.stop();
}
process.exit(0);
