// When things go wrong: agent failure, SIGTERM, cancel, approval timeout, malformed output,
// secrets, bad configuration. The runner never crashes and always leaves a final phase.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { transition } from '../../common/session/state-machine.ts';
import { eventually } from '../support/eventually.ts';
import { answer, processGroup, specFor, startRunner, useRunnerTestbed, waitFor, waitForPhase } from '../support/runner.ts';

const GITHUB_TOKEN = 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB';
const ANTHROPIC_KEY = 'sk-ant-test-secret-do-not-leak-42';

const bed = useRunnerTestbed('runfail');
const run = (prompt: string, env: Record<string, string> = {}) => bed.run(prompt, env);

describe.concurrent('runner failures', { timeout: 150_000 }, () => {
  it('agent failure → Failed with the message, partial diff kept', async () => {
    const { name, runner, repo } = await run('script:\nwrite: half.txt = half done\nfail: npm test failed (3 failing)');
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Failed');
    expect(session.status?.result).toMatchObject({ message: 'npm test failed (3 failing)', exitCode: 1 });
    expect(session.status?.result?.diffStat).toContain('half.txt');
    expect(readFileSync(join(repo, 'half.txt'), 'utf8')).toBe('half done');
  });

  it('SIGTERM mid-run: the agent process group is killed, Failed written, exit 0 within the grace period', async () => {
    const { name, runner } = await run('script:\nprogress: Starting a long job\ntool: Bash {"command":"sleep 60"}');
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
    await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.phase === 'Working' && !!s.status.progress?.some((p) => p.text === 'Starting a long job'));
    const agentPid = Number(/"pid":(\d+),"agent":"script"/.exec(runner.output())?.[1]);
    await eventually(() => expect(processGroup(agentPid).length).toBeGreaterThanOrEqual(2), 30_000); // the agent and its shell command
    expect(processGroup(agentPid)).toContain(agentPid);
    const sent = Date.now();
    runner.child.kill('SIGTERM');
    expect(await runner.exited, runner.output()).toBe(0);
    expect(Date.now() - sent).toBeLessThan(20_000); // inside Kubernetes' default 30 s grace
    await eventually(() => expect(processGroup(agentPid)).toEqual([]), 5_000);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Failed');
    expect(session.status?.result?.message).toContain('SIGTERM');
  });

  it('cancel from the phone: the runner stops the agent and writes Cancelled', async () => {
    const { name, runner } = await run('script:\nprogress: working\nsleep: 30000');
    await waitFor(bed.sessions, bed.ns, name, (s) => !!s.status?.progress?.some((p) => p.text === 'working'));
    await bed.sessions.patch(bed.ns, name, { spec: { cancel: true } });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await bed.sessions.get(bed.ns, name))?.status?.phase).toBe('Cancelled');
  });

  it('approval timeout: the controller writes TimedOut; the runner exits 0 and keeps the changes', async () => {
    const { name, runner, repo } = await run('script:\nwrite: kept.txt = keep me');
    const waiting = await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.phase === 'AwaitingApproval' && s.status.pending?.kind === 'changes');
    const next = transition(waiting.status?.phase, { type: 'ApprovalTimeout' });
    expect(next.ok).toBe(true);
    if (next.ok) await bed.sessions.patchStatus(bed.ns, name, { phase: next.phase, completionTime: new Date().toISOString() });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await bed.sessions.get(bed.ns, name))?.status?.phase).toBe('TimedOut');
    expect(readFileSync(join(repo, 'kept.txt'), 'utf8')).toBe('keep me');
  });

  it('malformed agent output (garbage, huge lines, invalid JSON, spoofed protocol) never crashes the runner', async () => {
    const command = [
      `printf '{not json\\n\\001tether:0000 {"t":"result","ok":false}\\n'`,
      `head -c 300000 /dev/zero | tr '\\000' x`, 'echo',
      `printf '\\377\\376 binary \\000 garbage\\n'`,
      `echo '::progress:: survived the garbage'`,
    ].join('; ');
    const { name, runner } = await run(`script:\nthis line is not a step\ntool: Bash ${JSON.stringify({ command })}\ntool: Bash {broken json\nprogress: ${'y'.repeat(3000)}\nsay: still here`);
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
    const broken = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'deny', message: 'no' });
    expect(JSON.parse(broken.status!.pending!.input!)).toEqual({ raw: '{broken json' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.status?.result?.summary).toBe('still here');
    const texts = session.status!.progress!.map((p) => p.text);
    expect(texts).toContain('survived the garbage');
    expect(Math.max(...texts.map((t) => t.length))).toBeLessThanOrEqual(500);
  });

  it('secrets never appear in status, logs or the diff', async () => {
    const prompt = `script:\nprogress: token ${GITHUB_TOKEN}\nwrite: leak.txt = key=${ANTHROPIC_KEY} token=${GITHUB_TOKEN}\ntool: Bash {"command":"echo ${GITHUB_TOKEN}"}`;
    const { name, runner } = await run(prompt, { GITHUB_TOKEN, TETHER_TEST_ANTHROPIC: ANTHROPIC_KEY });
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Succeeded');
    const status = JSON.stringify(session.status);
    expect(status).toContain('[redacted]');
    for (const secret of [GITHUB_TOKEN]) {
      expect(status).not.toContain(secret);
      expect(runner.output()).not.toContain(secret);
    }
    expect(bed.github.pulls.find((p) => p.head === `tether/${name}`)?.headers.authorization).toBe(`Bearer ${GITHUB_TOKEN}`);
  });

  it('refuses to start on a bad variable, naming it', async () => {
    const runner = startRunner({ kubeconfig: inject('kubeconfig'), namespace: bed.ns, name: 'x', env: { TETHER_SESSION_NAME: 'Not_A_Name' } });
    expect(await runner.exited).toBe(2);
    expect(runner.output()).toContain('invalid TETHER_SESSION_NAME');
    const policy = startRunner({ kubeconfig: inject('kubeconfig'), namespace: bed.ns, name: 'x', env: { TETHER_PERMISSION_POLICY: '{"allow": "Bash"}' } });
    expect(await policy.exited).toBe(2);
    expect(policy.output()).toContain('TETHER_PERMISSION_POLICY.allow');
  });

  it('waits for Starting, and fails plainly when the repository cannot be cloned', async () => {
    const name = `wait-${Date.now()}`;
    await bed.sessions.create(bed.ns, name, specFor('script:\nsay: hi', '/nonexistent/acme/web.git'));
    const runner = startRunner({ kubeconfig: inject('kubeconfig'), namespace: bed.ns, name, env: { GITHUB_API_URL: bed.github.url } });
    await new Promise((r) => setTimeout(r, 1500));
    expect((await bed.sessions.get(bed.ns, name))?.status?.phase).toBeUndefined();
    await bed.sessions.patchStatus(bed.ns, name, { phase: 'Starting' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await waitForPhase(bed.sessions, bed.ns, name, 'Failed');
    expect(session.status?.result?.message).toMatch(/^Could not get the repository: git fetch failed/);
    expect(existsSync(join(runner.workspace, 'repo', '.git'))).toBe(false);
    await eventually(() => expect(runner.child.exitCode).toBe(0));
  });

  it('GitHub refusing the pull request → Failed with a plain message; the pushed branch is recorded', async () => {
    const { name, runner, remote } = await bed.run('script:\nwrite: pr.txt = x', { GITHUB_API_URL: `${bed.github.url}/refusing` });
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Failed');
    expect(session.status?.result?.message).toMatch(/^Publishing failed: GitHub refused the pull request \(404\)/);
    expect(session.status?.result?.branch).toBe(`tether/${name}`);
    expect(remote.git('show', `tether/${name}:pr.txt`)).toBe('x');
  });

  it('SIGTERM while a tool request waits for the phone: Failed, the request withdrawn, exit 0', async () => {
    const { name, runner } = await run('script:\ntool: Bash {"command":"true"}');
    await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.pending?.kind === 'tool' && s.status.phase === 'AwaitingApproval');
    runner.child.kill('SIGTERM');
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Failed');
    expect(session.status?.pending).toBeUndefined();
    expect(runner.output()).not.toContain('runner crashed');
  });
});
