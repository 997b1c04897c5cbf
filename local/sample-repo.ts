// The local stack's remote: a bare git repository with a small sample project, owned by the stack's
// own user in a folder only that user may enter (0700), and served over HTTP on loopback with the
// runners' token (git-forge.ts) — runners push to it as to any forge; an agent's process on the same
// machine can neither open its files nor push without the token.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { serveGitOverHttp, type ForgeOptions, type GitHttpForge } from './git-forge.ts';
import { closeTree } from './private-files.ts';

const run = promisify(execFile);

const SAMPLE_PACKAGE = { name: 'sample-app', version: '1.0.0', private: true, scripts: { test: 'node --test' } };

const FILES: Record<string, string> = {
  'README.md': '# Sample app\n\nA tiny project the local Tether stack works on.\n',
  'package.json': `${JSON.stringify(SAMPLE_PACKAGE, null, 2)}\n`,
  'src/greet.js': 'export function greet(name) {\n  return `Hello, ${name}!`;\n}\n',
  'src/greet.test.js':
    "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { greet } from './greet.js';\n\n" +
    "test('greets', () => assert.equal(greet('Ada'), 'Hello, Ada!'));\n",
  'index.html':
    '<!doctype html>\n<html><head><title>Sample app</title></head>\n' +
    '<body><nav>Sample</nav><main><h1>Hello</h1></main></body></html>\n',
};

/** Where ensureSampleRepo(dir) keeps a sample remote: owner/repo as a GitHub URL would have them. */
export const sampleRepoPath = (dir: string, name = 'sample') => join(dir, 'acme', `${name}.git`);

/**
 * Creates `<dir>/acme/<name>.git` once (owner/repo as a GitHub URL would have them); returns its
 * path. `dir` and everything in it is the stack's user's alone (0700/0600).
 */
export async function ensureSampleRepo(dir: string, name = 'sample'): Promise<string> {
  const bare = sampleRepoPath(dir, name);
  if (!existsSync(join(bare, 'HEAD'))) await createSampleRepo(bare);
  closeTree(dir);
  return bare;
}

async function createSampleRepo(bare: string): Promise<void> {
  await mkdir(dirname(bare), { recursive: true });
  await run('git', ['init', '--bare', '--initial-branch=main', bare]);
  const work = await mkdtemp(join(tmpdir(), 'tether-sample-'));
  try {
    for (const [path, content] of Object.entries(FILES)) {
      await mkdir(dirname(join(work, path)), { recursive: true });
      await writeFile(join(work, path), content);
    }
    const git = (...args: string[]) =>
      run('git', ['-C', work, '-c', 'user.name=Tether', '-c', 'user.email=tether@localhost', ...args]);
    await git('init', '--initial-branch=main');
    await git('add', '.');
    await git('commit', '-m', 'Sample app');
    await git('push', bare, 'main');
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

export interface ServedRemotes {
  /** The forge's URL of a bare repository under the served folder (what Sessions name). */
  urlOf(path: string): string;
  forge: GitHttpForge;
}

/** Who else the forge lets in, and what it tells of pushes (the GitHub stand-in's forgeHooks). */
export type ForgeHooks = Pick<ForgeOptions, 'authorize' | 'onPushed'>;

/**
 * Serves bare repositories of this machine under `root` (each `<root>/<owner>/<name>.git`) at
 * `<forge>/<owner>/<name>.git`, fetched and pushed with `token`; nothing else under `root` is served.
 */
export async function serveRemotes(
  root: string,
  repositories: string[],
  token: string,
  hooks: ForgeHooks = {},
): Promise<ServedRemotes> {
  const urlPath = (path: string) => `/${relative(root, path)}`;
  for (const path of repositories) {
    if (!existsSync(join(path, 'HEAD')) || relative(root, path).split(sep).length !== 2)
      throw new Error(`${path} is not a bare repository at <owner>/<name> under ${root}`);
  }
  const forge = await serveGitOverHttp(root, token, { ...hooks, repositories: repositories.map(urlPath) });
  return { urlOf: (path) => `${forge.origin}${urlPath(path)}`, forge };
}

/**
 * The stack's own remote — the bare repository at `path`, or the sample one under the state folder — served with
 * `token`.
 */
export async function serveLocalRemote(
  stateDir: string,
  path: string | undefined,
  token: string,
): Promise<{ url: string; path: string; close(): Promise<void> }> {
  const bare = path ?? (await ensureSampleRepo(join(stateDir, 'remote')));
  const served = await serveRemotes(dirname(dirname(bare)), [bare], token);
  return { url: served.urlOf(bare), path: bare, close: () => served.forge.close() };
}
