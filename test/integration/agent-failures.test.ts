// When things go wrong with the real Claude Code against the scripted model this test runs: cancel
// mid-tool, API errors, malformed model output; and what a run costs, from its own model responses.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { answer, isAlive, processTree, useRunnerTestbed, waitFor } from '../support/runner.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const bed = useRunnerTestbed('agentfail');
const model = useScriptedModel();
const run = (prompt: string, env: Record<string, string> = {}) => bed.run(prompt, { ...model.env(), ...env });
const final = async (name: string) => (await bed.sessions.get(bed.ns, name))!;
/** Claude Code's price for the pinned model (claude-sonnet-4-5): $3 / $15 per million tokens in / out. */
const PRICE_PER_TOKEN = { input: 3e-6, output: 15e-6 };
/** The runner's stop grace (process-group.ts) with room for a loaded machine. */
const GRACE_MS = 5_000;

describe.concurrent('agent failures (real Claude Code, scripted model)', { timeout: 150_000 }, () => {
  it('cancel mid-tool: Claude Code and the command it runs are gone within the grace period, Cancelled', async () => {
    const { name, runner } = await run(
      `script:\nprogress: Starting the long command\ntool: Bash {"command":"node -e 'setTimeout(() => {}, 60000)' # ` +
        `cancel me"}`,
    );
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
    const agentPid = Number(await eventually(() => /"pid":(\d+),"agent":"claude"/.exec(runner.output())![1]));
    const tree = await eventually(() => {
      const pids = processTree(agentPid);
      expect(pids.some((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('setTimeout'))).toBe(true);
      return pids;
    }, 30_000);
    await bed.sessions.patch(bed.ns, name, { spec: { cancel: true } });
    await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.phase === 'Cancelled');
    await eventually(() => expect(tree.filter(isAlive)).toEqual([]), GRACE_MS);
    expect(await runner.exited, runner.output()).toBe(0);
  });

  it('API 500 once: Claude Code retries and the run goes on', async () => {
    const { name, runner } = await run(
      'script:\nprogress: before the outage\nerror: 500\nsay: recovered from the outage',
    );
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.status?.result?.summary).toBe('recovered from the outage');
    expect(model.turns('recovered from the outage').map((r) => r.response.status)).toEqual([200, 500, 200]);
  });

  it('API 400: Failed with a plain message, nothing raw', async () => {
    const { name, runner } = await run('script:\nprogress: about to be refused\nerror: 400');
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Failed');
    expect(session.status?.result?.message).toBe('The Claude API refused the request (400): scripted error 400');
    expect(model.turns('about to be refused').filter((r) => r.response.status === 400).length).toBeGreaterThanOrEqual(
      1,
    );
  });

  it("cost and tokens of the run's model responses reach status.result", async () => {
    const { name, runner } = await run(
      'script:\nprogress: counting tokens\nwrite: counted.txt = counted\nsay: counted the tokens',
    );
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(await runner.exited, runner.output()).toBe(0);
    const usage = model.turns('counted the tokens').map((r) => r.response.usage!);
    expect(usage).toHaveLength(3);
    const input = usage.reduce((sum, u) => sum + u.input_tokens, 0);
    const output = usage.reduce((sum, u) => sum + u.output_tokens, 0);
    const result = (await final(name)).status?.result;
    expect(result?.tokens).toEqual({ input, output });
    // stored to a hundredth of a cent
    expect(result?.costUsd).toBeCloseTo(input * PRICE_PER_TOKEN.input + output * PRICE_PER_TOKEN.output, 4);
  });

  it(`malformed model output (a tool call with broken JSON, an \
unknown tool) ends in a plain message, never a hang`, async () => {
    const { name, runner } = await run('script:\ntool: Bash {"command": "echo half\ntool: NoSuchTool {"x":1}');
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Succeeded');
    const calls = model.calls('NoSuchTool');
    expect(calls.map((c) => [c.name, c.result?.error])).toEqual([
      ['Bash', true],
      ['NoSuchTool', true],
    ]);
    expect(calls[0]!.result!.text).toMatch(
      /^InputValidationError: Bash was called with input that could not be parsed as JSON/,
    );
    expect(calls[1]!.result!.text).toBe('Error: No such tool available: NoSuchTool');
    expect(session.status?.result?.summary).toBe(
      [
        'Bash did not run: InputValidationError: Bash was called with input that could not be parsed as JSON.',
        'NoSuchTool did not run: Error: No such tool available: NoSuchTool',
      ].join('\n'),
    );
    expect(session.spec.decisions ?? []).toEqual([]); // nothing reached the phone to ask
  });
});
