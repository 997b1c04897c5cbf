// End to end, live runners (keep-alive on): a phone's next commands run in the Pod its last command
// left live — the real Claude Code against the scripted model, signed webhooks, fake Twilio and
// GitHub — and a Pod is never handed to another phone, nor to a command for another repository.
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runnerName, workspaceName } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import type { Phone } from '../support/e2e.ts';
import { bindings, errorsLogged, say, useLiveStack } from '../support/live-runner.ts';
import { bareGit, fileAt } from '../support/pull-loop.ts';

const live = useLiveStack({
  numbers: ['+14155550271', '+14155550272', '+14155550273', '+14155550274'],
  moreRepos: ['second'],
  keepAlive: '10m',
});

const hashOf = (phone: Phone) => live.e2e.stack.phoneHash(phone.number);
const podOf = (session: Session) => session.status!.podName!;
const runnerPid = (pod: string) =>
  live.e2e.stack.nodeAgent.processOf(`${live.e2e.stack.runnerNamespace}/${pod}`)?.child.pid;
const pullOf = (session: Session) => live.e2e.github.pulls.filter((p) => p.head.includes(session.metadata.name!));

describe('end to end: a live runner per phone', () => {
  it(`three commands from one phone run in one Pod: the first cold, the next two warm; a warm run \
publishes`, async () => {
    const { e2e, pods } = live;
    const phone = e2e.phone('+14155550271');
    await say(phone, 'first');
    const [first] = await live.sessionsOf(phone);
    const pod = podOf(first!);
    expect(pod).toBe(runnerName(first!.metadata.name!));
    const pid = runnerPid(pod);
    expect(pid, 'the runner of the first command is kept running').toBeDefined();

    await phone.send('script:\nprogress: second working\nwrite: live.txt = written by a warm runner\nsay: second done');
    // The review's picture, uploaded by the warm runner: the relay takes the token of the Pod bound to the Session.
    const review = await phone.next(/1 file changed/);
    expect(review.mediaUrls).toHaveLength(1);
    await phone.next(/Reply \*approve\* to open a pull request/);
    await phone.send('approve');
    await phone.next(/Pull request opened/);
    await say(phone, 'third');

    const sessions = await live.sessionsOf(phone);
    expect(bindings(sessions)).toEqual([`Succeeded cold ${pod}`, `Succeeded warm ${pod}`, `Succeeded warm ${pod}`]);
    expect(pods.created(hashOf(phone)).map((p) => p.name)).toEqual([pod]);
    expect(pods.seen(pod)!.deletingAt, 'the Pod stays live for the next command').toBeUndefined();
    expect(runnerPid(pod), 'one runner process served all three').toBe(pid);
    // The warm Session's own work reached its pull request, and only its own.
    expect(fileAt(e2e.remote, pullOf(sessions[1]!)[0]!.head, 'live.txt')).toBe('written by a warm runner');
    expect(pullOf(sessions[2]!)).toEqual([]);
    expect(phone.received().filter((m) => /could not be sent/.test(m.body))).toEqual([]);
    expect(errorsLogged(e2e)).toEqual([]);
    const transcript = phone.received().map((m) => `bot > ${m.body}${m.mediaUrls.length ? ' [picture]' : ''}`);
    console.log(`phone transcript (three commands, one live runner):\n${transcript.join('\n')}`);
  }, 240_000);

  it("a second phone's command never lands in the first phone's live Pod", async () => {
    const { e2e, pods } = live;
    const first = e2e.phone('+14155550272');
    const second = e2e.phone('+14155550273');
    await say(first, 'mine');
    const idle = podOf((await live.sessionsOf(first))[0]!);

    // The first phone's Pod is live and idle: the second phone's command gets a Pod of its own.
    await say(second, 'theirs');
    const [theirs] = await live.sessionsOf(second);
    expect(bindings([theirs!])).toEqual([`Succeeded cold ${runnerName(theirs!.metadata.name!)}`]);
    expect(pods.created(hashOf(second)).map((p) => [p.name, p.workspace])).toEqual([
      [podOf(theirs!), workspaceName(hashOf(second))],
    ]);
    expect(
      pods.seen(idle)!.deletingAt,
      "the second phone's command leaves the first phone's Pod alone",
    ).toBeUndefined();

    // …which was free to take: the first phone's next command runs in it.
    await say(first, 'mine again');
    expect(bindings(await live.sessionsOf(first))).toEqual([`Succeeded cold ${idle}`, `Succeeded warm ${idle}`]);
    expect(pods.created(hashOf(first)).map((p) => p.name)).toEqual([idle]);
  }, 240_000);

  it('a command for another repository does not reuse the Pod: the live one goes, its own runs', async () => {
    const { e2e, pods } = live;
    const phone = e2e.phone('+14155550274');
    const secondRemote = join(dirname(e2e.remote), 'second.git');
    await say(phone, 'default');
    const idle = podOf((await live.sessionsOf(phone))[0]!);

    await phone.send('@second script:\nwrite: other.txt = in the second repository\nsay: other done');
    await phone.next(/^On it \(session [0-9a-f]{4}\) in \*second\*\./);
    await phone.next(/Reply \*approve\* to open a pull request/);
    await phone.send('approve');
    await phone.next(/Pull request opened/);
    const [, other] = await live.sessionsOf(phone);
    expect(bindings([other!])).toEqual([`Succeeded cold ${runnerName(other!.metadata.name!)}`]);
    expect(pods.seen(podOf(other!))!.workspace).toBe(workspaceName(hashOf(phone), 'second'));
    // The workspace claim is ReadWriteOnce: the idle Pod of the other workspace goes.
    await pods.gone(idle);
    const [pull] = pullOf(other!);
    expect(fileAt(secondRemote, pull!.head, 'other.txt')).toBe('in the second repository');
    expect(() => bareGit(e2e.remote, 'rev-parse', '--verify', '--quiet', `${pull!.head}^{commit}`)).toThrow();

    // Back on the default repository: the second repository's Pod is not reused either.
    await say(phone, 'back');
    const back = (await live.sessionsOf(phone)).at(-1)!;
    expect(bindings([back])).toEqual([`Succeeded cold ${runnerName(back.metadata.name!)}`]);
    expect(pods.created(hashOf(phone)).map((p) => p.name)).toEqual([idle, podOf(other!), podOf(back)]);
    await pods.gone(podOf(other!));
  }, 240_000);
});
