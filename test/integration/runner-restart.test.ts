// A run that survives its runner: the first runner process (and Claude Code under it) is SIGKILLed mid-run, the
// test plays the controller's ReplacePod (status.runnerRestarts 1, a new podName, the phase kept) and starts a
// second runner on the same workspace with a fresh private folder, as a new Pod would have. Real API server, real
// Claude Code, the scripted model, a local bare remote, the GitHub stand-in.
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import type { Session } from '../../common/session/schema.ts';
import { RESTART_LINE } from '../../runner-image/restart.ts';
import { answer, killTree, startRunner, useRunnerTestbed, waitFor, type RunnerProcess } from '../support/runner.ts';

const bed = useRunnerTestbed('runner-restart');

/** The Pod is lost: every process of the runner's tree at once, as the kubelet kills a container. */
async function lose(runner: RunnerProcess): Promise<void> {
  killTree(runner.child.pid!);
  await runner.exited;
}

/** The controller's ReplacePod as the test plays it, then the replacement runner on the same workspace. */
async function replace(name: string, lost: RunnerProcess, env: Record<string, string> = {}): Promise<RunnerProcess> {
  await bed.sessions.patchStatus(bed.ns, name, { podName: `${name}-runner-1`, runnerRestarts: 1 });
  return startRunner({
    kubeconfig: inject('kubeconfig'),
    namespace: bed.ns,
    name,
    workspace: lost.workspace,
    env: bed.env(env),
  });
}

const restartLines = (s: Session) => s.status!.progress!.filter((p) => p.text === RESTART_LINE).length;

describe.concurrent('a runner replaced mid-run', { timeout: 180_000 }, () => {
  it('Working: the conversation goes on from where it stopped, the phone told once', async () => {
    const { name, runner, remote, repo } = await bed.run(
      'script: two files\nwrite: one.txt = one\nsleep: 6000\nwrite: two.txt = two\nsay: Wrote both.',
    );
    const working = await waitFor(bed.sessions, bed.ns, name, (s) => !!s.status?.result?.agentSessionId);
    await waitFor(bed.sessions, bed.ns, name, () => existsSync(join(repo, 'one.txt')));
    await lose(runner);
    const second = await replace(name, runner);
    const pending = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(pending.status?.result?.diffStat).toMatch(/one\.txt[\s\S]*two\.txt/);
    expect(await second.exited, second.output()).toBe(0);
    const done = (await bed.sessions.get(bed.ns, name))!;
    expect(done.status?.phase).toBe('Succeeded');
    expect(restartLines(done)).toBe(1);
    expect(done.status?.result?.agentSessionId).toBe(working.status?.result?.agentSessionId);
    expect(done.status?.result?.summary).toBe('Wrote both.');
    expect(existsSync(join(repo, 'TETHER_DEMO.md'))).toBe(false);
    expect(remote.git('show', `tether/${name}:one.txt`)).toBe('one');
    expect(remote.git('show', `tether/${name}:two.txt`)).toBe('two');
  });

  it(`AwaitingApproval (a tool): the request stays open, its answer reaches the resumed agent, asked \
once`, async () => {
    const { name, runner, repo } = await bed.run(
      'script: run it\ntool: Bash {"command":"echo ran > ran.txt"}\nsay: Ran it.',
    );
    const asked = await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.pending?.kind === 'tool');
    await lose(runner);
    const second = await replace(name, runner);
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
    const review = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(review.status?.result?.diffStat).toContain('ran.txt');
    expect(await second.exited, second.output()).toBe(0);
    const done = (await bed.sessions.get(bed.ns, name))!;
    expect(done.status?.phase).toBe('Rejected');
    expect(restartLines(done)).toBe(1);
    // The tool request the phone answered is the one the first runner raised: the phone was asked once.
    expect(done.spec.decisions!.map((d) => d.requestId.split('-')[0])).toEqual(['tool', 'changes']);
    expect(done.spec.decisions![0]!.requestId).toBe(asked.status!.pending!.id);
    expect(existsSync(join(repo, 'ran.txt'))).toBe(false);
  });

  it('AwaitingApproval (the changes): approved after the restart, the reviewed tree is published', async () => {
    const { name, runner, remote } = await bed.run('script: add a\nwrite: a.txt = reviewed\nsay: Added a.');
    const review = await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.pending?.kind === 'changes');
    await lose(runner);
    const second = await replace(name, runner);
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(await second.exited, second.output()).toBe(0);
    const done = (await bed.sessions.get(bed.ns, name))!;
    expect(done.status?.phase).toBe('Succeeded');
    expect(restartLines(done)).toBe(1);
    expect(remote.git('rev-parse', `tether/${name}^{tree}`).trim()).toBe(review.status?.result?.snapshotTree);
    expect(bed.github.pulls.filter((p) => p.head === `tether/${name}`)).toHaveLength(1);
  });

  it('Publishing: the branch already pushed is kept, the pull request opened once', async () => {
    // The first runner's GitHub answers nothing: it dies between the push and the pull request.
    const silent = await listenSilently();
    try {
      const { name, runner, remote } = await bed.run('script: add b\nwrite: b.txt = bee\nsay: Added b.', {
        GITHUB_API_URL: silent.url,
      });
      await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
      await waitFor(bed.sessions, bed.ns, name, () => remote.git('branch', '--list', `tether/${name}`).trim() !== '');
      const pushed = remote.git('rev-parse', `tether/${name}`).trim();
      await lose(runner);
      expect((await bed.sessions.get(bed.ns, name))?.status?.phase).toBe('Publishing');
      const second = await replace(name, runner);
      expect(await second.exited, second.output()).toBe(0);
      const done = (await bed.sessions.get(bed.ns, name))!;
      expect(done.status?.result?.message, second.output()).toBeUndefined();
      expect(done.status?.phase).toBe('Succeeded');
      expect(restartLines(done)).toBe(1);
      expect(remote.git('rev-parse', `tether/${name}`).trim()).toBe(pushed);
      expect(done.status?.result).toMatchObject({ commit: pushed, pushed: 'opened' });
      expect(bed.github.pulls.filter((p) => p.head === `tether/${name}`)).toHaveLength(1);
      expect(readFileSync(join(runner.workspace, 'repo', 'README.md'), 'utf8')).toBe('# web\n');
    } finally {
      silent.close();
    }
  });
});

/** A loopback server that takes requests and never answers them. */
async function listenSilently(): Promise<{ url: string; close: () => void }> {
  const server: Server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
