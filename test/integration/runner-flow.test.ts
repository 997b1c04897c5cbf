// The runner as a real process against the real apiserver: a local bare repo as the remote, a fake
// GitHub API; the test plays the controller (Starting) and the relay (decisions).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/github.ts';
import { adminKubeConfig, createNamespace, deleteNamespace, installSessionCrd, sessionClient } from '../support/cluster.ts';
import { answer, createStartedSession, makeRemote, specFor, startRunner } from '../support/runner.ts';

let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;
let github: FakeGitHub;

beforeAll(async () => {
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  ns = await createNamespace(kc, 'runner');
  sessions = sessionClient(kc);
  github = await startFakeGitHub();
});
afterAll(async () => {
  await github?.close();
  await deleteNamespace(kc, ns);
});

async function run(prompt: string, env: Record<string, string> = {}) {
  const remote = makeRemote();
  const name = await createStartedSession(sessions, ns, specFor(prompt, remote.url));
  const runner = startRunner({ kubeconfig: inject('kubeconfig'), namespace: ns, name, env: { GITHUB_API_URL: github.url, ...env } });
  return { remote, name, runner, repo: join(runner.workspace, 'repo') };
}

describe.concurrent('runner flows', () => {
  it('progress only: Working, progress lines in order, Succeeded with the summary', async () => {
    const { name, runner } = await run('script:\nprogress: Reading the code\nprogress: Reading the code\nsleep: 50\nprogress: Thinking\nsay: Nothing to change.');
    expect(await runner.exited, runner.output()).toBe(0);
    const session = (await sessions.get(ns, name))!;
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.status?.result?.summary).toBe('Nothing to change.');
    const texts = session.status!.progress!.map((p) => p.text);
    expect(texts).toEqual(['Workspace ready', 'Reading the code', 'Thinking']);
    const seqs = session.status!.progress!.map((p) => p.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(session.status?.completionTime).toBeDefined();
    expect(session.status?.result?.exitCode).toBe(0);
  });

  it('changes → approve: branch pushed, PR created on the fake, Succeeded with prUrl', async () => {
    const { name, runner, remote } = await run('script: add a greeting\nprogress: Writing\nwrite: src/hello.txt = hello\\nworld\nsay: Added src/hello.txt');
    const pending = await answer(sessions, ns, name, 'changes', { action: 'approve' });
    expect(pending.status?.result?.diffStat).toContain('src/hello.txt');
    expect(pending.status?.result?.diff).toContain('+hello');
    const diffImage = pending.status?.result?.media?.find((m) => m.kind === 'diff');
    expect(diffImage?.ref).toMatch(/^file:media\/.+\/diff\.png$/);
    expect(readFileSync(join(runner.workspace, diffImage!.ref.slice(5))).subarray(1, 4).toString()).toBe('PNG');
    expect(await runner.exited, runner.output()).toBe(0);
    const done = (await sessions.get(ns, name))!;
    expect(done.status?.phase).toBe('Succeeded');
    const pull = github.pulls.find((p) => p.head === `tether/${name}`);
    expect(pull).toMatchObject({ owner: 'acme', repo: 'web', base: 'main', title: 'add a greeting' });
    expect(done.status?.result).toMatchObject({ prUrl: pull!.html_url, branch: `tether/${name}` });
    expect(remote.git('show', `tether/${name}:src/hello.txt`)).toBe('hello\nworld');
    expect(remote.git('log', '-1', '--format=%s', `tether/${name}`).trim()).toBe('add a greeting');
  });

  it('changes → reject: tree clean, Rejected', async () => {
    const { name, runner, repo } = await run('script:\nwrite: notes.md = draft\nwrite: README.md = replaced');
    await answer(sessions, ns, name, 'changes', { action: 'reject', message: 'not now' });
    expect(await runner.exited, runner.output()).toBe(0);
    expect((await sessions.get(ns, name))?.status?.phase).toBe('Rejected');
    expect(existsSync(join(repo, 'notes.md'))).toBe(false);
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# web\n');
  });
});
