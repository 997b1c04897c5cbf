// End to end, live runners (keep-alive on): a phone's next commands run in the Pod its last command
// left live — the real Claude Code against the scripted model, signed webhooks, fake Twilio and
// GitHub — and a Pod is never handed to another phone, nor to a command for another repository.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerName, workspaceName } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { startE2E, type E2E, type Phone } from '../support/e2e.ts';
import { watchRunnerPods, type RunnerPods } from '../support/runner-pods.ts';

let e2e: E2E;
let pods: RunnerPods;
beforeAll(async () => {
  e2e = await startE2E({
    numbers: ['+14155550271', '+14155550272', '+14155550273', '+14155550274'],
    moreRepos: ['second'],
    keepAlive: '10m',
  });
  pods = await watchRunnerPods(e2e);
}, 90_000);
afterAll(async () => {
  pods?.stop();
  await e2e?.stop();
});

const mine = async (phone: Phone) => (await e2e.list()).filter((s) => s.spec.phone === phone.number);
const hashOf = (phone: Phone) => e2e.stack.phoneHash(phone.number);
const podOf = (session: Session) => session.status!.podName!;
const bindings = (sessions: Session[]) =>
  sessions.map((s) => `${s.status?.phase} ${s.status?.runnerStart} ${s.status?.podName}`);
const runnerPid = (pod: string) => e2e.stack.nodeAgent.processOf(`${e2e.stack.runnerNamespace}/${pod}`)?.child.pid;
const show = (remote: string, rev: string) =>
  execFileSync('git', ['-c', `safe.directory=${remote}`, '-C', remote, 'show', rev], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
const transcript = (phone: Phone) =>
  phone
    .received()
    .map((m) => `bot > ${m.body}`)
    .join('\n');

/** Sends a command that only says `word` and waits for the result. */
async function say(phone: Phone, word: string, prefix = ''): Promise<void> {
  await phone.send(`${prefix}script:\nprogress: ${word} working\nsay: ${word} done`);
  await phone.next(new RegExp(`^${word} done$`, 'm'));
}

describe('end to end: a live runner per phone', () => {
  it('three commands from one phone run in one Pod: the first cold, the next two warm; a warm run publishes', async () => {
    const phone = e2e.phone('+14155550271');
    await say(phone, 'first');
    const [first] = await mine(phone);
    const pod = podOf(first!);
    expect(pod).toBe(runnerName(first!.metadata.name!));
    const pid = runnerPid(pod);
    expect(pid, 'the runner of the first command is kept running').toBeDefined();

    await phone.send('script:\nprogress: second working\nwrite: live.txt = written by a warm runner\nsay: second done');
    await phone.next(/Reply \*approve\* to open a pull request/);
    await phone.send('approve');
    await phone.next(/Pull request opened/);
    await say(phone, 'third');

    const sessions = await mine(phone);
    expect(bindings(sessions)).toEqual([
      `Succeeded cold ${pod}`,
      `Succeeded warm ${pod}`,
      `Succeeded warm ${pod}`,
    ]);
    expect(pods.created(hashOf(phone)).map((p) => p.name)).toEqual([pod]);
    expect(pods.seen(pod)!.deletingAt, 'the Pod stays live for the next command').toBeUndefined();
    expect(runnerPid(pod), 'one runner process served all three').toBe(pid);
    // The warm Session's own work reached its pull request, and only its own.
    const pull = e2e.github.pulls.find((p) => p.head.includes(sessions[1]!.metadata.name!))!;
    expect(show(e2e.remote, `${pull.head}:live.txt`)).toBe('written by a warm runner');
    expect(e2e.github.pulls.filter((p) => p.head.includes(sessions[2]!.metadata.name!))).toEqual([]);
    console.log(`phone transcript (three commands, one live runner):\n${transcript(phone)}`);
  }, 240_000);

  it("a second phone's command never lands in the first phone's live Pod", async () => {
    const first = e2e.phone('+14155550272');
    const second = e2e.phone('+14155550273');
    await say(first, 'mine');
    const live = podOf((await mine(first))[0]!);

    // The first phone's Pod is live and idle: the second phone's command gets a Pod of its own.
    await say(second, 'theirs');
    const [theirs] = await mine(second);
    expect(bindings([theirs!])).toEqual([`Succeeded cold ${runnerName(theirs!.metadata.name!)}`]);
    expect(pods.created(hashOf(second)).map((p) => [p.name, p.workspace])).toEqual([
      [podOf(theirs!), workspaceName(hashOf(second))],
    ]);
    expect(pods.seen(live)!.deletingAt, "the second phone's command leaves the first phone's Pod alone").toBeUndefined();

    // …which was free to take: the first phone's next command runs in it.
    await say(first, 'mine again');
    expect(bindings(await mine(first))).toEqual([`Succeeded cold ${live}`, `Succeeded warm ${live}`]);
    expect(pods.created(hashOf(first)).map((p) => p.name)).toEqual([live]);
  }, 240_000);

  it('a command for another repository does not reuse the Pod: the live one goes, its own runs', async () => {
    const phone = e2e.phone('+14155550274');
    const secondRemote = join(dirname(e2e.remote), 'second.git');
    await say(phone, 'default');
    const live = podOf((await mine(phone))[0]!);

    await phone.send('@second script:\nwrite: other.txt = in the second repository\nsay: other done');
    await phone.next(/^On it \(session [0-9a-f]{4}\) in \*second\*\./);
    await phone.next(/Reply \*approve\* to open a pull request/);
    await phone.send('approve');
    await phone.next(/Pull request opened/);
    const [, other] = await mine(phone);
    expect(bindings([other!])).toEqual([`Succeeded cold ${runnerName(other!.metadata.name!)}`]);
    expect(pods.seen(podOf(other!))!.workspace).toBe(workspaceName(hashOf(phone), 'second'));
    // The workspace claim is ReadWriteOnce: the idle Pod of the other workspace goes.
    await pods.gone(live);
    const pull = e2e.github.pulls.find((p) => p.head.includes(other!.metadata.name!))!;
    expect(show(secondRemote, `${pull.head}:other.txt`)).toBe('in the second repository');
    expect(() => show(e2e.remote, pull.head)).toThrow();

    // Back on the default repository: the second repository's Pod is not reused either.
    await say(phone, 'back');
    const back = (await mine(phone)).at(-1)!;
    expect(bindings([back])).toEqual([`Succeeded cold ${runnerName(back.metadata.name!)}`]);
    expect(pods.created(hashOf(phone)).map((p) => p.name)).toEqual([live, podOf(other!), podOf(back)]);
    await pods.gone(podOf(other!));
  }, 240_000);
});
