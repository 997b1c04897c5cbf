// Tool permissions, questions, plans and screenshots through status.pending and spec.decisions.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionSpec } from '../../common/session/schema.ts';
import { answer, useRunnerTestbed, waitFor } from '../support/runner.ts';

const bed = useRunnerTestbed('runreq');
let page: Server;
let pageUrl: string;

beforeAll(async () => {
  page = createServer((_req, res) => res.end('<!doctype html><body style="background:#fc0"><h1>Hello from the dev server</h1></body>'));
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
  pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
});
afterAll(() => void page?.close());

const run = (prompt: string, extra: Partial<SessionSpec> = {}) => bed.run(prompt, {}, extra);

const final = async (name: string) => (await bed.sessions.get(bed.ns, name))!;

describe.concurrent('runner requests', { timeout: 150_000 }, () => {
  it('tool asked → allow: the command runs, progress and phase go back to Working', async () => {
    const { name, runner, repo } = await run('script:\ntool: Bash {"command":"echo ::progress:: Running the build; echo built > build.log"}\nsay: Built.');
    const asked = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
    expect(asked.status?.pending).toMatchObject({ kind: 'tool', tool: 'Bash' });
    expect(JSON.parse(asked.status!.pending!.input!)).toEqual({ command: 'echo ::progress:: Running the build; echo built > build.log' });
    await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.phase !== 'AwaitingApproval' && !s.status?.pending);
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Rejected');
    expect(session.status?.progress?.map((p) => p.text)).toContain('Running the build');
    expect(existsSync(join(repo, 'build.log'))).toBe(false);
  });

  it('tool asked → deny with a reason: the agent is told, nothing runs, Succeeded without changes', async () => {
    const { name, runner, repo } = await run('script:\ntool: Bash {"command":"touch denied.txt"}');
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'deny', message: 'no shell today' });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.status?.result?.summary).toBe('Bash did not run: no shell today');
    expect(existsSync(join(repo, 'denied.txt'))).toBe(false);
  });

  it('allow always (scope session) allows the same tool again without asking', async () => {
    // Commands that change something: Claude Code runs the ones it deems read-only (`true`, `ls`) without asking.
    const { name, runner } = await run('script:\ntool: Bash {"command":"echo one > one.txt"}\ntool: Bash {"command":"echo two > two.txt"}\nsay: twice');
    await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow', scope: 'session' });
    const changes = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(changes.status?.result?.diffStat).toContain('two.txt');
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Rejected');
    expect(session.spec.decisions?.map((d) => d.requestId.split('-')[0])).toEqual(['tool', 'changes']);
  });

  it('question → answer: options in pending, the answer reaches the agent', async () => {
    const { name, runner } = await run('script:\nask: Which database should the cache use? | Redis | In-memory');
    const asked = await answer(bed.sessions, bed.ns, name, 'question', { action: 'answer', answers: { 'Which database should the cache use?': 'Redis' } });
    expect(asked.status?.pending?.questions).toEqual([{ question: 'Which database should the cache use?', header: 'Question', multiSelect: false, options: [{ label: 'Redis', description: '' }, { label: 'In-memory', description: '' }] }]);
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await final(name)).status?.result?.summary).toBe('Which database should the cache use? → Redis');
  });

  it('question answered with free text in message', async () => {
    const { name, runner } = await run('script:\nask: Which colour? | Red | Blue');
    await answer(bed.sessions, bed.ns, name, 'question', { action: 'answer', message: 'teal please' });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await final(name)).status?.result?.summary).toBe('Which colour? → teal please');
  });

  it('plan mode: the plan is a pending request of kind plan; approve runs it', async () => {
    const { name, runner } = await run('script:\nwrite: plan.txt = planned\nsay: done', { mode: 'plan' });
    const asked = await answer(bed.sessions, bed.ns, name, 'plan', { action: 'approve' });
    expect(asked.status?.pending?.summary).toBe('1. write plan.txt\n2. done');
    const changes = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(changes.status?.result?.diffStat).toContain('plan.txt');
    expect(await runner.exited, runner.output()).toBe(0);
  });

  it('plan mode: reject ends the session Rejected without running anything', async () => {
    const { name, runner, repo } = await run('script:\nwrite: plan.txt = planned', { mode: 'plan' });
    await answer(bed.sessions, bed.ns, name, 'plan', { action: 'reject', message: 'too big' });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await final(name)).status?.phase).toBe('Rejected');
    expect(existsSync(join(repo, 'plan.txt'))).toBe(false);
  });

  it('screenshot tool: JPEG ≤ 600 KB kept on the volume and listed in result.media', async () => {
    const { name, runner } = await run(`script:\ntool: mcp__tether__screenshot {"url":"${pageUrl}","caption":"home page"}\nsay: shot`);
    expect(await runner.exited, runner.output()).toBe(0);
    const session = await final(name);
    expect(session.status?.phase).toBe('Succeeded');
    const shot = session.status?.result?.media?.find((m) => m.kind === 'screenshot');
    expect(shot).toMatchObject({ contentType: 'image/jpeg', caption: 'home page' });
    const file = join(runner.workspace, shot!.ref.replace(/^file:/, ''));
    expect(statSync(file).size).toBe(shot!.bytes);
    expect(shot!.bytes).toBeLessThanOrEqual(600 * 1024);
    expect(readFileSync(file).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
  });
});
