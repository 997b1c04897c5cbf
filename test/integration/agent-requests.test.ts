// The real Claude Code against the scripted model this test runs: tool permissions, questions and
// the screenshot tool through status.pending and spec.decisions, and what the model received back.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, useRunnerTestbed, waitFor } from '../support/runner.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const bed = useRunnerTestbed('agentreq');
const model = useScriptedModel();
let page: Server;
let pageUrl: string;

beforeAll(async () => {
  page = createServer((_req, res) =>
    res.end('<!doctype html><body style="background:#fc0"><h1>Hello from the dev server</h1></body>'),
  );
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
  pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
});
afterAll(() => void page?.close());

const run = (prompt: string) => bed.run(prompt, model.env());
const final = async (name: string) => (await bed.sessions.get(bed.ns, name))!;

describe.concurrent('agent requests (real Claude Code, scripted model)', { timeout: 150_000 }, () => {
  it('tool asked → allow: the command runs, its output reaches the model and the phone', async () => {
    const { name, runner, repo } = await run(
      'script:\ntool: Bash {"command":"echo ::progress:: Running the build; echo built > build.log"}\nsay: Built.',
    );
    const asked = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
    expect(asked.status?.pending).toMatchObject({ kind: 'tool', tool: 'Bash' });
    expect(JSON.parse(asked.status!.pending!.input!)).toEqual({
      command: 'echo ::progress:: Running the build; echo built > build.log',
    });
    await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.phase !== 'AwaitingApproval' && !s.status?.pending);
    const changes = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(changes.status?.result?.diff).toContain('+built');
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Rejected');
    expect(session.status?.progress?.map((p) => p.text)).toContain('Running the build');
    expect(existsSync(join(repo, 'build.log'))).toBe(false);
    expect(model.calls('Running the build')).toEqual([
      expect.objectContaining({ name: 'Bash', result: { error: false, text: '::progress:: Running the build' } }),
    ]);
  });

  it(`tool asked → deny with a reason: the model receives \
the reason as a tool error, the command never ran`, async () => {
    const { name, runner, repo } = await run('script:\ntool: Bash {"command":"touch denied.txt"}');
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'deny', message: 'no shell today' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.status?.result?.summary).toBe('Bash did not run: no shell today');
    expect(existsSync(join(repo, 'denied.txt'))).toBe(false);
    expect(model.calls('touch denied.txt')).toEqual([
      expect.objectContaining({ name: 'Bash', result: { error: true, text: 'no shell today' } }),
    ]);
  });

  it('allow always (scope session) allows the same tool again without asking', async () => {
    // Commands that change something: Claude Code runs the ones it deems read-only (`true`, `ls`) without asking.
    const { name, runner, repo } = await run(
      'script:\ntool: Bash {"command":"echo one > one.txt"}\ntool: Bash {"command":"echo two > two.txt"}\nsay: twice',
    );
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow', scope: 'session' });
    const changes = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(changes.status?.result?.diffStat).toContain('two.txt');
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Rejected');
    expect(session.spec.decisions?.map((d) => d.requestId.split('-')[0])).toEqual(['tool', 'changes']);
    expect(existsSync(join(repo, 'two.txt'))).toBe(false);
    expect(model.calls('echo two > two.txt').map((c) => c.result?.error)).toEqual([false, false]);
  });

  it('question → answer: options in pending, the model receives the chosen label', async () => {
    const { name, runner } = await run('script:\nask: Which database should the cache use? | Redis | In-memory');
    const asked = await answer(bed.sessions, bed.ns, name, 'question', {
      action: 'answer',
      answers: { 'Which database should the cache use?': 'Redis' },
    });
    expect(asked.status?.pending?.questions).toEqual([
      {
        question: 'Which database should the cache use?',
        header: 'Question',
        multiSelect: false,
        options: [
          { label: 'Redis', description: '' },
          { label: 'In-memory', description: '' },
        ],
      },
    ]);
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await final(name)).status?.result?.summary).toBe('Which database should the cache use? → Redis');
    const [call] = model.calls('Which database should the cache use?');
    expect(call).toMatchObject({ name: 'AskUserQuestion', result: { error: false } });
    expect(call!.result!.text).toContain('"Which database should the cache use?"="Redis"');
  });

  it('question answered with free text in message', async () => {
    const { name, runner } = await run('script:\nask: Which colour? | Red | Blue');
    await answer(bed.sessions, bed.ns, name, 'question', { action: 'answer', message: 'teal please' });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await final(name)).status?.result?.summary).toBe('Which colour? → teal please');
    expect(model.calls('Which colour?')[0]?.result?.text).toContain('"Which colour?"="teal please"');
  });

  it(`screenshot tool called by Claude Code: JPEG ≤ 600 KB kept in the runner's private folder and listed in \
result.media`, async () => {
    const { name, runner } = await run(
      `script:\ntool: mcp__tether__screenshot {"url":"${pageUrl}","caption":"home page"}\nsay: shot`,
    );
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Succeeded');
    const shot = session.status?.result?.media?.find((m) => m.kind === 'screenshot');
    expect(shot).toMatchObject({ contentType: 'image/jpeg', caption: 'home page' });
    const file = join(runner.gitStore, 'media', shot!.ref.replace(/^file:/, ''));
    expect(statSync(file).size).toBe(shot!.bytes);
    expect(shot!.bytes).toBeLessThanOrEqual(600 * 1024);
    expect(readFileSync(file).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    expect(model.calls(pageUrl)).toEqual([
      expect.objectContaining({
        name: 'mcp__tether__screenshot',
        result: { error: false, text: `Screenshot captured (${shot!.bytes} bytes) and sent to the user.` },
      }),
    ]);
  });
});
