// Plan mode and resume with the real Claude Code against the scripted model this test runs: the
// plan Claude Code reads from its plan file reaches the phone; the next command of a phone
// continues the conversation (the model receives the earlier turns).
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { answer, createStartedSession, makeRemote, specFor, startRunner, useRunnerTestbed } from '../support/runner.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const bed = useRunnerTestbed('agentplan');
const model = useScriptedModel();
const final = async (name: string) => (await bed.sessions.get(bed.ns, name))!;
const toolsAnswered = (marker: string) => model.turns(marker).map((r) => r.response.tool?.name ?? 'end');

describe.concurrent('plan mode and resume (real Claude Code, scripted model)', { timeout: 150_000 }, () => {
  it('plan mode: the plan file Claude Code asked for becomes pending kind plan; approve runs it', async () => {
    const { name, runner } = await bed.run(
      'script:\nplan: Add plan.txt saying planned\nwrite: plan.txt = planned\nsay: done',
      model.env(),
      { mode: 'plan' },
    );
    const asked = await answer(bed.sessions, bed.ns, name, 'plan', { action: 'approve' });
    expect(asked.status?.pending?.summary).toBe('Add plan.txt saying planned');
    const changes = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(changes.status?.result?.diffStat).toContain('plan.txt');
    expect(await runner.exited, runner.output()).toBe(0);
    expect(toolsAnswered('Add plan.txt saying planned')).toEqual(['Write', 'ExitPlanMode', 'Write', 'end']);
    const plans = join(runner.workspace, 'home', '.claude', 'plans');
    const [planFile] = readdirSync(plans);
    expect(readFileSync(join(plans, planFile!), 'utf8')).toBe('Add plan.txt saying planned');
  });

  it(`plan mode: a revision goes back to Claude Code, \
which proposes a new plan; approving that one runs it`, async () => {
    const { name, runner } = await bed.run(
      'script:\nplan: 1. Add revised.txt\nwrite: revised.txt = planned\nsay: done',
      model.env(),
      { mode: 'plan' },
    );
    const first = await answer(bed.sessions, bed.ns, name, 'plan', {
      action: 'revise',
      message: 'also   explain\nwhy',
    });
    expect(first.status?.pending?.summary).toBe('1. Add revised.txt');
    const second = await answer(bed.sessions, bed.ns, name, 'plan', { action: 'approve' });
    expect(second.status?.pending?.summary).toBe('1. Add revised.txt\n2. also explain why');
    const changes = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(changes.status?.result?.diffStat).toContain('revised.txt');
    expect(await runner.exited, runner.output()).toBe(0);
    expect(toolsAnswered('1. Add revised.txt')).toEqual([
      'Write',
      'ExitPlanMode',
      'Write',
      'ExitPlanMode',
      'Write',
      'end',
    ]);
  });

  it('plan mode without a plan: step proposes the steps as a numbered plan', async () => {
    const { name, runner } = await bed.run('script:\nwrite: numbered.txt = planned\nsay: done', model.env(), {
      mode: 'plan',
    });
    const asked = await answer(bed.sessions, bed.ns, name, 'plan', { action: 'approve' });
    expect(asked.status?.pending?.summary).toBe('1. write numbered.txt\n2. done');
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(await runner.exited, runner.output()).toBe(0);
  });

  it('plan mode: reject ends the session Rejected; Claude Code is stopped before it does anything else', async () => {
    const { name, runner, repo } = await bed.run(
      'script:\nplan: Rewrite everything\nwrite: rejected.txt = planned',
      model.env(),
      { mode: 'plan' },
    );
    await answer(bed.sessions, bed.ns, name, 'plan', { action: 'reject', message: 'too big' });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await final(name)).status?.phase).toBe('Rejected');
    expect(existsSync(join(repo, 'rejected.txt'))).toBe(false);
    expect(toolsAnswered('Rewrite everything')).toEqual(['Write', 'ExitPlanMode']);
  });

  it(`resume: the next command of the phone continues \
the conversation; the model receives the earlier turns`, async () => {
    const remote = makeRemote();
    const workspace = mkdtempSync(join(tmpdir(), 'tether-ws-'));
    const runOn = async (prompt: string, resumeAgentSession?: string) => {
      const name = await createStartedSession(
        bed.sessions,
        bed.ns,
        specFor(prompt, remote.url, resumeAgentSession ? { resumeAgentSession } : {}),
      );
      const runner = startRunner({
        kubeconfig: inject('kubeconfig'),
        namespace: bed.ns,
        name,
        workspace,
        env: bed.env(model.env()),
      });
      expect(await runner.exited, runner.output()).toBe(0);
      return final(name);
    };
    const first = await runOn('script:\nsay: the first answer, about resume');
    const id = first.status?.result?.agentSessionId;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    const second = await runOn('script:\nsay: the second answer, about resume', id);
    expect(second.status?.phase).toBe('Succeeded');
    expect(second.status?.result).toMatchObject({ agentSessionId: id, summary: 'the second answer, about resume' });
    const [turn] = model.turns('the second answer, about resume');
    const earlier = JSON.stringify(turn!.body!.messages);
    expect(earlier).toContain('script:\\nsay: the first answer, about resume');
    expect(turn!.body!.messages!.filter((m) => m.role === 'assistant')).toEqual([
      expect.objectContaining({
        content: [expect.objectContaining({ type: 'text', text: 'the first answer, about resume' })],
      }),
    ]);
  });
});
