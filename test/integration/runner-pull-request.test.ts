// The runner continuing a pull request, as a real process against the real apiserver with the real
// Claude Code and the scripted model: the first command opens the pull request (who asked, from which
// channel), follow-ups (spec.pullRequest) add commits to its branch, a push by someone else meanwhile
// is merged under the review or fails the Session with the changes kept, and a branch the forge lost
// starts from the base.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import type { SessionSpec } from '../../common/session/schema.ts';
import {
  answer,
  createStartedSession,
  makeRemote,
  specFor,
  startRunner,
  useRunnerTestbed,
  waitFor,
} from '../support/runner.ts';

const bed = useRunnerTestbed('runner-pr');
const REQUESTER = { name: 'Ada Lovelace', email: 'ada@example.com', github: 'ada' };

/** A remote, one workspace for the phone, and runs of commands on it. */
function phoneOn() {
  const remote = makeRemote();
  const workspace = mkdtempSync(join(tmpdir(), 'tether-ws-'));
  const run = async (prompt: string, extra: Partial<SessionSpec> = {}) => {
    const spec = specFor(prompt, remote.url, { requester: REQUESTER, channel: 'whatsapp', ...extra });
    const name = await createStartedSession(bed.sessions, bed.ns, spec);
    const runner = startRunner({
      kubeconfig: inject('kubeconfig'),
      namespace: bed.ns,
      name,
      workspace,
      env: bed.env(),
    });
    return { name, runner };
  };
  /** Someone else's commit of one file, pushed to the branch from a clone of their own. */
  const pushAs = (branch: string, path: string, content: string) => {
    const clone = mkdtempSync(join(remote.root, 'someone-'));
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', clone, '-c', 'user.name=o', '-c', 'user.email=o@o', ...args], { encoding: 'utf8' });
    execFileSync('git', ['clone', '--quiet', '--branch', branch, remote.url, clone]);
    writeFileSync(join(clone, path), content);
    git('add', path);
    git('commit', '--quiet', '-m', `someone changed ${path}`);
    git('push', '--quiet', 'origin', branch);
    return git('rev-parse', 'HEAD').trim();
  };
  const tip = (ref: string) => remote.git('rev-parse', ref).trim();
  return { remote, workspace, repo: join(workspace, 'repo'), run, pushAs, tip };
}

/** The first command of the phone: approved, the pull request opened. */
async function opened(phone: ReturnType<typeof phoneOn>) {
  const first = await phone.run('script: add a greeting\nwrite: hello.txt = hello\\n\nsay: Added hello.txt');
  await answer(bed.sessions, bed.ns, first.name, 'changes', { action: 'approve' });
  expect(await first.runner.exited, first.runner.output()).toBe(0);
  const session = (await bed.sessions.get(bed.ns, first.name))!;
  const branch = `tether/${first.name}`;
  const pull = bed.github.pulls.find((p) => p.head === branch)!;
  return { session, branch, pull, pullRequest: { number: pull.number, branch, url: pull.html_url } };
}

describe.concurrent('a pull request continued', { timeout: 300_000 }, () => {
  it(`opens it saying who asked; follow-ups add commits to its branch, \
on top of someone else's push when that merges cleanly`, async () => {
    const phone = phoneOn();
    const { session, branch, pull, pullRequest } = await opened(phone);
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.status?.result).toMatchObject({
      prNumber: pull.number,
      prUrl: pull.html_url,
      branch,
      commit: phone.tip(branch),
      pushed: 'opened',
      prStat: '1 file changed, 1 insertion(+)',
    });
    expect(pull.body).toContain('Asked by Ada Lovelace (+1415•••0123) from WhatsApp.');
    expect(phone.remote.git('log', '-1', '--format=%B', branch)).toContain(
      'Co-authored-by: Ada Lovelace <ada@example.com>',
    );
    const opening = phone.tip(branch);

    const second = await phone.run('script: also say goodbye\nwrite: bye.txt = bye\\n', { pullRequest });
    const review = await waitFor(bed.sessions, bed.ns, second.name, (s) => s.status?.pending?.kind === 'changes');
    expect(review.status?.progress?.map((p) => p.text)).toContain(
      `Continuing pull request #${pull.number} (${branch})`,
    );
    expect(review.status?.result?.diffStat).toContain('bye.txt');
    expect(review.status?.result?.diffStat).not.toContain('hello.txt');
    expect(review.status?.pending?.summary).toContain(
      `Whole pull request #${pull.number}: 2 files changed, 2 insertions(+)`,
    );
    await answer(bed.sessions, bed.ns, second.name, 'changes', { action: 'approve' });
    expect(await second.runner.exited, second.runner.output()).toBe(0);
    const added = (await bed.sessions.get(bed.ns, second.name))!;
    expect(added.status?.phase).toBe('Succeeded');
    expect(added.status?.result).toMatchObject({
      prNumber: pull.number,
      prUrl: pull.html_url,
      branch,
      commit: phone.tip(branch),
      pushed: 'added',
      prStat: '2 files changed, 2 insertions(+)',
    });
    expect(phone.tip(`${branch}^`)).toBe(opening);
    expect(bed.github.pulls.filter((p) => p.head === branch)).toHaveLength(1);
    // Between commands the checkout rests on the base.
    expect(existsSync(join(phone.repo, 'hello.txt'))).toBe(false);

    const third = await phone.run('script: and a welcome\nwrite: welcome.txt = welcome\\n', { pullRequest });
    await waitFor(bed.sessions, bed.ns, third.name, (s) => s.status?.pending?.kind === 'changes');
    const theirs = phone.pushAs(branch, 'theirs.txt', 'theirs\n');
    await answer(bed.sessions, bed.ns, third.name, 'changes', { action: 'approve' });
    expect(await third.runner.exited, third.runner.output()).toBe(0);
    const onNewTip = (await bed.sessions.get(bed.ns, third.name))!;
    expect(onNewTip.status?.result).toMatchObject({ pushed: 'onNewTip', commit: phone.tip(branch) });
    expect(onNewTip.status?.progress?.map((p) => p.text)).toContain(
      `Someone else pushed to pull request #${pull.number} meanwhile: your changes went on top of it`,
    );
    expect(phone.tip(`${branch}^`)).toBe(theirs);
    expect(phone.remote.git('ls-tree', '--name-only', branch).split('\n').filter(Boolean).sort()).toEqual([
      'README.md',
      'bye.txt',
      'hello.txt',
      'theirs.txt',
      'welcome.txt',
    ]);
  });

  it('a push by someone else that conflicts fails the Session with the changes kept on the workspace', async () => {
    const phone = phoneOn();
    const { branch, pullRequest } = await opened(phone);
    const second = await phone.run('script: shout\nwrite: hello.txt = HELLO\\n', { pullRequest });
    await waitFor(bed.sessions, bed.ns, second.name, (s) => s.status?.pending?.kind === 'changes');
    const theirs = phone.pushAs(branch, 'hello.txt', 'hi there\n');
    await answer(bed.sessions, bed.ns, second.name, 'changes', { action: 'approve' });
    expect(await second.runner.exited, second.runner.output()).toBe(0);
    const failed = (await bed.sessions.get(bed.ns, second.name))!;
    expect(failed.status?.phase).toBe('Failed');
    expect(failed.status?.result?.message).toBe(
      `Someone else pushed to ${branch} meanwhile and changed the same parts of hello.txt. ` +
        'Nothing was pushed; your changes are kept on the workspace.',
    );
    expect(phone.tip(branch)).toBe(theirs);
    expect(readFileSync(join(phone.repo, 'hello.txt'), 'utf8')).toBe('HELLO\n');
  });

  it("starts from the base when the forge no longer has the pull request's branch", async () => {
    const phone = phoneOn();
    const { branch, pullRequest } = await opened(phone);
    phone.remote.git('update-ref', '-d', `refs/heads/${branch}`);
    const second = await phone.run('script: again\nwrite: again.txt = again\\n', { pullRequest });
    const review = await waitFor(bed.sessions, bed.ns, second.name, (s) => s.status?.pending?.kind === 'changes');
    expect(review.status?.progress?.map((p) => p.text)).toContain(
      `The branch of pull request #${pullRequest.number} is gone from the forge; starting from main`,
    );
    expect(existsSync(join(phone.repo, 'hello.txt'))).toBe(false);
    await answer(bed.sessions, bed.ns, second.name, 'changes', { action: 'reject' });
    expect(await second.runner.exited, second.runner.output()).toBe(0);
    expect((await bed.sessions.get(bed.ns, second.name))?.status?.phase).toBe('Rejected');
  });
});
