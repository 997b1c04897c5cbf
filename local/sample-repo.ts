// A local bare git repository with a small sample project: the "remote" of the local stack.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { RUNNER_UID } from '../controller/builders.ts';

const run = promisify(execFile);

const FILES: Record<string, string> = {
  'README.md': '# Sample app\n\nA tiny project the local Tether stack works on.\n',
  'package.json': `${JSON.stringify({ name: 'sample-app', version: '1.0.0', private: true, scripts: { test: 'node --test' } }, null, 2)}\n`,
  'src/greet.js': 'export function greet(name) {\n  return `Hello, ${name}!`;\n}\n',
  'src/greet.test.js': "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { greet } from './greet.js';\n\ntest('greets', () => assert.equal(greet('Ada'), 'Hello, Ada!'));\n",
  'index.html': '<!doctype html>\n<html><head><title>Sample app</title></head>\n<body><nav>Sample</nav><main><h1>Hello</h1></main></body></html>\n',
};

/** Where ensureSampleRepo(dir) keeps the sample remote: owner/repo as a GitHub URL would have them. */
export const sampleRepoPath = (dir: string) => join(dir, 'acme', 'sample.git');

/** Creates the sample remote under `dir` once; returns its path. */
export async function ensureSampleRepo(dir: string): Promise<string> {
  const bare = sampleRepoPath(dir);
  if (!existsSync(join(bare, 'HEAD'))) await createSampleRepo(bare);
  await giveToRunner(bare);
  return bare;
}

/**
 * As root, the node agent runs the runner as its Pod's user: git refuses a repository another user
 * owns ("dubious ownership") and the runner pushes to it, so the local remote is the runner's.
 * Readers of another uid name it in `-c safe.directory=<path>` (for this local path only).
 */
async function giveToRunner(bare: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await run('chown', ['-R', `${RUNNER_UID}:${RUNNER_UID}`, bare]);
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
    const git = (...args: string[]) => run('git', ['-C', work, '-c', 'user.name=Tether', '-c', 'user.email=tether@localhost', ...args]);
    await git('init', '--initial-branch=main');
    await git('add', '.');
    await git('commit', '-m', 'Sample app');
    await git('push', bare, 'main');
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
