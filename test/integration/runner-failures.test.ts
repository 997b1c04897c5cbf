// When things go wrong: agent failure, SIGTERM, cancel, approval timeout, malformed output,
// secrets, bad configuration. The runner never crashes and always leaves a final phase.
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { transition } from '../../common/session/state-machine.ts';
import { loadConfig } from '../../controller/config.ts';
import { eventually } from '../support/eventually.ts';
import {
  answer,
  isAlive,
  processTree,
  specFor,
  startRunner,
  useRunnerTestbed,
  waitFor,
  waitForPhase,
} from '../support/runner.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

const GITHUB_TOKEN = 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB';
const ANTHROPIC_KEY = 'sk-ant-test-secret-do-not-leak-42';

const bed = useRunnerTestbed('runfail');
/** A command that runs a minute and that Claude Code neither refuses (a bare `sleep`) nor deems read-only. */
const LONG_COMMAND = "node -e 'setTimeout(() => {}, 60000)'";
const run = (prompt: string, env: Record<string, string> = {}) => bed.run(prompt, env);

describe.concurrent('runner failures', { timeout: 150_000 }, () => {
  it('agent failure → Failed with the message, partial diff kept', async () => {
    const { name, runner, repo } = await run('script:\nwrite: half.txt = half done\nfail: npm test failed (3 failing)');
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Failed');
    expect(session.status?.result).toMatchObject({
      message: 'The Claude API refused the request (400): npm test failed (3 failing)',
      exitCode: 1,
    });
    expect(session.status?.result?.diffStat).toContain('half.txt');
    expect(readFileSync(join(repo, 'half.txt'), 'utf8')).toBe('half done');
  });

  it(`SIGTERM mid-run of a replacement runner: Claude Code and the tool it runs \
are killed, Failed written, exit 0 within the grace period`, async () => {
    const { name, runner } = await run(
      `script:\nprogress: Starting a long job\ntool: Bash {"command":"${LONG_COMMAND}"}`,
    );
    // The runner of a run already replaced once: its loss ends the run (a first runner's is left to its replacement).
    await bed.sessions.patchStatus(bed.ns, name, { runnerRestarts: 1 });
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
    await waitFor(
      bed.sessions,
      bed.ns,
      name,
      (s) => s.status?.phase === 'Working' && !!s.status.progress?.some((p) => p.text === 'Starting a long job'),
    );
    const agentPid = Number(/"pid":(\d+),"agent":"claude"/.exec(runner.output())?.[1]);
    const tree = await eventually(() => {
      const pids = processTree(agentPid);
      expect(
        pids.filter((pid) => /setTimeout/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))).length,
      ).toBeGreaterThan(0); // the tool's processes
      return pids;
    }, 30_000);
    const sent = Date.now();
    runner.child.kill('SIGTERM');
    expect(await runner.exited, runner.output()).toBe(0);
    // Exit 0 is the runner stopping inside its own shutdown deadline; the bound that matters is the
    // runner Pod's grace period, after which the kubelet SIGKILLs it.
    expect(Date.now() - sent).toBeLessThan(
      loadConfig({ TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY }).terminationGraceSeconds * 1000,
    );
    await eventually(() => expect(tree.filter(isAlive)).toEqual([]), 5_000);
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
    const waiting = await waitFor(
      bed.sessions,
      bed.ns,
      name,
      (s) => s.status?.phase === 'AwaitingApproval' && s.status.pending?.kind === 'changes',
    );
    const next = transition(waiting.status?.phase, { type: 'ApprovalTimeout' });
    expect(next.ok).toBe(true);
    if (next.ok)
      await bed.sessions.patchStatus(bed.ns, name, { phase: next.phase, completionTime: new Date().toISOString() });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await bed.sessions.get(bed.ns, name))?.status?.phase).toBe('TimedOut');
    expect(readFileSync(join(repo, 'kept.txt'), 'utf8')).toBe('keep me');
  });

  it(`malformed model output (garbage tool output, broken JSON, \
an unknown tool, huge lines) never crashes the runner`, async () => {
    // Claude Code keeps a huge output in a file and shows the model its beginning: the marker comes first.
    const command = [
      `printf '{not json\\n'`,
      `printf '\\377\\376 binary \\000 garbage\\n'`,
      `echo '::progress:: survived the garbage'`,
      `head -c 300000 /dev/zero | tr '\\000' x`,
      'echo',
    ].join('; ');
    const prompt =
      `script:\nthis line is not a step\ntool: Bash ${JSON.stringify({ command })}\ntool: Bash {broken ` +
      `json\ntool: NoSuchTool {}\nprogress: ${'y'.repeat(3000)}\nsay: still here`;
    const { name, runner } = await run(prompt, { TETHER_PERMISSION_POLICY: '{"allow":["Bash"]}' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.status?.result?.summary).toBe('still here');
    const texts = session.status!.progress!.map((p) => p.text);
    expect(texts).toContain('survived the garbage');
    expect(texts.some((t) => t.startsWith('yyyy'))).toBe(true);
    expect(Math.max(...texts.map((t) => t.length))).toBeLessThanOrEqual(500);
  });

  it('secrets never appear in status, logs or the diff', async () => {
    const prompt =
      `script:\nprogress: token ${GITHUB_TOKEN}\nwrite: leak.txt = key=${ANTHROPIC_KEY} ` +
      `token=${GITHUB_TOKEN}\ntool: Bash {"command":"echo ${GITHUB_TOKEN} > echoed.txt"}`;
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
    expect(bed.github.pulls.find((p) => p.head === `tether/${name}`)?.headers.authorization).toBe(
      `Bearer ${GITHUB_TOKEN}`,
    );
  });

  it('refuses to start on a bad variable, naming it', async () => {
    const runner = startRunner({
      kubeconfig: inject('kubeconfig'),
      namespace: bed.ns,
      name: 'x',
      env: { TETHER_SESSION_NAME: 'Not_A_Name' },
    });
    expect(await runner.exited).toBe(2);
    expect(runner.output()).toContain('TETHER_SESSION_NAME: "Not_A_Name" is invalid');
    const policy = startRunner({
      kubeconfig: inject('kubeconfig'),
      namespace: bed.ns,
      name: 'x',
      env: { TETHER_PERMISSION_POLICY: '{"allow": "Bash"}' },
    });
    expect(await policy.exited).toBe(2);
    expect(policy.output()).toContain('TETHER_PERMISSION_POLICY.allow');
  });

  it('waits for Starting, and fails plainly when the repository cannot be cloned', async () => {
    const name = `wait-${Date.now()}`;
    await bed.sessions.create(
      bed.ns,
      name,
      specFor('script:\nsay: hi', join(tmpdir(), 'nonexistent', 'acme', 'web.git')),
    );
    const runner = startRunner({ kubeconfig: inject('kubeconfig'), namespace: bed.ns, name, env: bed.env() });
    await eventually(() =>
      expect(runner.output()).toContain('waiting for the controller to mark the Session Starting'),
    );
    expect((await bed.sessions.get(bed.ns, name))?.status?.phase).toBeUndefined();
    await bed.sessions.patchStatus(bed.ns, name, { phase: 'Starting' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await waitForPhase(bed.sessions, bed.ns, name, 'Failed');
    expect(session.status?.result?.message).toMatch(/^Could not get the repository: git fetch failed/);
    expect(existsSync(join(runner.workspace, 'repo', '.git'))).toBe(false);
    await eventually(() => expect(runner.child.exitCode).toBe(0));
  });

  it('GitHub refusing the pull request → Failed with a plain message; the pushed branch is recorded', async () => {
    const { name, runner, remote } = await bed.run('script:\nwrite: pr.txt = x', {
      GITHUB_API_URL: `${bed.github.url}/refusing`,
    });
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Failed');
    expect(session.status?.result?.message).toMatch(/^Publishing failed: GitHub refused the pull request \(404\)/);
    expect(session.status?.result?.branch).toBe(`tether/${name}`);
    expect(remote.git('show', `tether/${name}:pr.txt`)).toBe('x');
  });

  it(`SIGTERM (its Pod deleted or evicted) while a tool request waits for the phone: the run is left open for \
the replacement runner — the request still pending, no final phase, exit 1`, async () => {
    const { name, runner } = await run('script:\ntool: Bash {"command":"touch asked.txt"}');
    const asked = await waitFor(
      bed.sessions,
      bed.ns,
      name,
      (s) => s.status?.pending?.kind === 'tool' && s.status.phase === 'AwaitingApproval',
    );
    runner.child.kill('SIGTERM');
    expect(await runner.exited, runner.output()).toBe(1);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('AwaitingApproval');
    expect(session.status?.pending).toEqual(asked.status?.pending);
    expect(runner.output()).toContain('the run is left for the new runner Pod');
    expect(runner.output()).not.toContain('runner crashed');
  });
});
