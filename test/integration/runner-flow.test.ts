// The runner as a real process against the real apiserver: a local bare repo as the remote, a fake
// GitHub API, the real Claude Code against the scripted model the runner starts; the test plays the
// controller (Starting) and the relay (decisions).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import {
  answer,
  createStartedSession,
  makeRemote,
  specFor,
  startRunner,
  useRunnerTestbed,
  waitFor,
} from '../support/runner.ts';

const bed = useRunnerTestbed('runner');
const run = (prompt: string, env: Record<string, string> = {}) => bed.run(prompt, env);

describe.concurrent('runner flows', { timeout: 150_000 }, () => {
  it('progress only: Working, progress lines in order, Succeeded with the summary', async () => {
    const { name, runner } = await run(
      'script:\nprogress: Reading the code\nprogress: Reading the code\nsleep: 50\nprogress: Thinking\nsay: Nothing ' +
        'to change.',
    );
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.status?.result?.summary).toBe('Nothing to change.');
    const texts = session.status!.progress!.map((p) => p.text);
    expect(texts).toEqual(['Reading the code', 'Thinking']);
    expect(session.status?.result?.agentSessionId).toMatch(/^[0-9a-f-]{36}$/);
    const seqs = session.status!.progress!.map((p) => p.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(session.status?.completionTime).toBeDefined();
    expect(session.status?.result?.exitCode).toBe(0);
  });

  it('changes → approve: branch pushed, PR created on the fake, Succeeded with prUrl', async () => {
    const { name, runner, remote } = await run(
      'script: add a greeting\nprogress: Writing\nwrite: src/hello.txt = hello\\nworld\nsay: Added src/hello.txt',
    );
    const pending = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(pending.status?.result?.diffStat).toContain('src/hello.txt');
    expect(pending.status?.result?.diff).toContain('+hello');
    const diffImage = pending.status?.result?.media?.find((m) => m.kind === 'diff');
    expect(diffImage?.ref).toBe(`file:${name}/diff-1.png`);
    expect(pending.status?.result?.diffFiles).toEqual({ names: ['src/hello.txt'], total: 1, shown: 1 });
    // Kept in the runner's private folder, never on the workspace the agent writes.
    expect(
      readFileSync(join(runner.gitStore, 'media', diffImage!.ref.slice(5)))
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    expect(existsSync(join(runner.workspace, 'media'))).toBe(false);
    expect(await runner.exited, runner.output()).toBe(0);
    const done = (await bed.sessions.get(bed.ns, name))!;
    expect(done.status?.phase).toBe('Succeeded');
    const pull = bed.github.pulls.find((p) => p.head === `tether/${name}`);
    expect(pull).toMatchObject({ owner: 'acme', repo: 'web', base: 'main', title: 'add a greeting' });
    expect(done.status?.result).toMatchObject({ prUrl: pull!.html_url, branch: `tether/${name}` });
    expect(remote.git('show', `tether/${name}:src/hello.txt`)).toBe('hello\nworld');
    expect(remote.git('log', '-1', '--format=%s', `tether/${name}`).trim()).toBe('add a greeting');
  });

  it("hidden characters in the prompt and the agent's summary reach the forge as code points", async () => {
    const { name, runner, remote } = await run(
      'script: ring the\u0007 bell\u202E lleb\u200B now\nwrite: bell.txt = ding\nsay: Rang\u202E it\u2066 twice\u0007',
    );
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
    expect(await runner.exited, runner.output()).toBe(0);
    const pull = bed.github.pulls.find((p) => p.head === `tether/${name}`)!;
    expect(pull.title).toBe('ring the<U+0007> bell<U+202E> lleb<U+200B> now');
    expect(pull.body).toContain('Rang<U+202E> it<U+2066> twice<U+0007>');
    const message = remote.git('log', '-1', '--format=%B', `tether/${name}`);
    expect(message.split('\n')[0]).toBe(pull.title);
    for (const text of [pull.title, pull.body, message, pull.head])
      expect(text).not.toMatch(/(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
    expect(pull.head).toMatch(/^tether\/[a-z0-9.-]+$/);
  });

  it('changes → reject: tree clean, Rejected', async () => {
    const { name, runner, repo } = await run('script:\nwrite: notes.md = draft\nwrite: README.md = replaced');
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject', message: 'not now' });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await bed.sessions.get(bed.ns, name))?.status?.phase).toBe('Rejected');
    expect(existsSync(join(repo, 'notes.md'))).toBe(false);
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# web\n');
  });

  it(`with TETHER_RELAY_URL the diff image is uploaded with \
the relay token and referenced by the relay ref`, async () => {
    const uploads: { url: string; auth?: string; type?: string; bytes: number }[] = [];
    const relay = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        uploads.push({
          url: `${req.method} ${req.url}`,
          auth: req.headers.authorization,
          type: req.headers['content-type'],
          bytes: Buffer.concat(chunks).length,
        });
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ref: req.url!.replace(/^\/uploads\//, '') }));
      });
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const tokenFile = join(mkdtempSync(join(tmpdir(), 'tether-token-')), 'token');
    writeFileSync(tokenFile, 'projected-relay-token\n');
    try {
      const { name, runner } = await run('script:\nwrite: a.txt = a', {
        TETHER_RELAY_URL: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`,
        TETHER_RELAY_TOKEN_FILE: tokenFile,
      });
      const pending = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
      expect(await runner.exited, runner.output()).toBe(0);
      expect(uploads).toEqual([
        {
          url: `PUT /uploads/${bed.ns}/${name}/diff-1.png`,
          auth: 'Bearer projected-relay-token',
          type: 'image/png',
          bytes: expect.any(Number),
        },
      ]);
      expect(pending.status?.result?.media).toEqual([
        expect.objectContaining({
          kind: 'diff',
          ref: `${bed.ns}/${name}/diff-1.png`,
          contentType: 'image/png',
          bytes: uploads[0]!.bytes,
        }),
      ]);
      // Uploaded, so kept nowhere: not on the workspace, not in the private folder.
      expect([join(runner.workspace, 'media'), join(runner.gitStore, 'media')].filter(existsSync)).toEqual([]);
    } finally {
      relay.close();
    }
  });

  it(`a long diff: 3 review pages; diff <file> (spec.diffRequests) \
gets that file's pages while the review is open`, async () => {
    const body = Array.from({ length: 45 }, (_, i) => `line ${i} of the file`).join('\\n');
    const { name, runner } = await run(
      `script:\n${['a', 'b', 'c', 'd'].map((f) => `write: ${f}.txt = ${body}`).join('\n')}`,
    );
    const review = await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.pending?.kind === 'changes');
    const pages = review.status!.result!.media!.filter((m) => m.kind === 'diff');
    expect(pages.map((m) => m.ref.replace(/^.*\//, ''))).toEqual(['diff-1.png', 'diff-2.png', 'diff-3.png']);
    const { names, total, shown } = review.status!.result!.diffFiles!;
    expect({ names, total }).toEqual({ names: ['a.txt', 'b.txt', 'c.txt', 'd.txt'], total: 4 });
    expect(shown).toBeLessThan(4);
    await bed.sessions.patch(bed.ns, name, { spec: { diffRequests: ['d.txt'] } });
    const answered = await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.result?.diffAnswered === 1);
    const asked = answered.status!.result!.media!.filter((m) => m.request === 1);
    expect(asked.map((m) => [m.ref.replace(/^.*\//, ''), m.caption])).toEqual([
      ['diff-r1-1.png', 'd.txt (1/2)'],
      ['diff-r1-2.png', 'd.txt (2/2)'],
    ]);
    for (const m of asked)
      expect(
        readFileSync(join(runner.gitStore, 'media', m.ref.slice(5)))
          .subarray(1, 4)
          .toString(),
      ).toBe('PNG');
    await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(await runner.exited, runner.output()).toBe(0);
  });

  it('a relay that refuses the diff image does not block the changes gate', async () => {
    const { name, runner } = await run('script:\nwrite: b.txt = b', {
      TETHER_RELAY_URL: 'http://127.0.0.1:9',
      TETHER_RELAY_TOKEN_FILE: '/nonexistent/token',
    });
    const pending = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(pending.status?.result?.media).toBeUndefined();
    expect(pending.status?.pending?.summary).toContain('b.txt');
    expect(pending.status?.progress?.map((p) => p.text)).toContain(
      'The diff picture could not be sent; the list of changes follows as text',
    );
    expect(await runner.exited, runner.output()).toBe(0);
  });

  it(`a spec.resumeAgentSession that is not on the \
workspace starts a new conversation instead of failing`, async () => {
    const gone = '0b7e6c1a-4d4e-4c36-9a57-000000000000';
    const { name, runner } = await bed.run('script:\nsay: continued', {}, { resumeAgentSession: gone });
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.status?.result?.summary).toBe('continued');
    expect(session.status?.result?.agentSessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(session.status?.result?.agentSessionId).not.toBe(gone);
    expect(session.status?.progress?.map((p) => p.text)).toContain(
      'Starting a new conversation (the earlier one is not on this workspace)',
    );
  });

  it('reuses the workspace: later commands fetch the base branch, kept changes carry over', async () => {
    const remote = makeRemote();
    const workspace = mkdtempSync(join(tmpdir(), 'tether-ws-'));
    const runOn = async (prompt: string) => {
      const name = await createStartedSession(bed.sessions, bed.ns, specFor(prompt, remote.url));
      const runner = startRunner({
        kubeconfig: inject('kubeconfig'),
        namespace: bed.ns,
        name,
        workspace,
        env: bed.env(),
      });
      return { name, runner };
    };
    const repoGit = (...args: string[]) =>
      execFileSync('git', ['-C', join(workspace, 'repo'), ...args], { encoding: 'utf8' }).trim();

    const first = await runOn('script:\nwrite: first.txt = 1');
    await answer(bed.sessions, bed.ns, first.name, 'changes', { action: 'approve' });
    expect(await first.runner.exited, first.runner.output()).toBe(0);

    const other = join(remote.root, 'other');
    execFileSync('git', ['clone', '--quiet', remote.url, other]);
    writeFileSync(join(other, 'upstream.txt'), 'from someone else\n');
    execFileSync('git', ['-C', other, 'add', 'upstream.txt']);
    execFileSync('git', [
      '-C',
      other,
      '-c',
      'user.name=o',
      '-c',
      'user.email=o@o',
      'commit',
      '--quiet',
      '-m',
      'upstream change',
    ]);
    execFileSync('git', ['-C', other, 'push', '--quiet', 'origin', 'main']);

    const second = await runOn('script:\nwrite: half.txt = half\nfail: tests failed');
    expect(await second.runner.exited, second.runner.output()).toBe(0);
    expect(repoGit('rev-parse', 'HEAD')).toBe(
      execFileSync('git', ['-C', other, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim(),
    );
    expect(repoGit('rev-parse', '--abbrev-ref', 'HEAD')).toBe('main');
    expect(existsSync(join(workspace, 'repo', 'first.txt'))).toBe(false);

    const third = await runOn('script:\nsay: continuing');
    await answer(bed.sessions, bed.ns, third.name, 'changes', { action: 'reject' });
    expect(await third.runner.exited, third.runner.output()).toBe(0);
    const session = (await bed.sessions.get(bed.ns, third.name))!;
    expect(session.status?.progress?.map((p) => p.text)).toContain('Continuing from the changes kept on the workspace');
    expect(session.status?.result?.diffStat).toContain('half.txt');
  });
});
