// The repository's CLAUDE.md as the runner reads it for the model: a regular file of the checkout,
// or a link to one; links out of the checkout, special files and huge files are left out with a
// reason, without blocking and without reading them.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRepoInstructions, REPO_INSTRUCTIONS_MAX_CHARS } from '../../runner-image/agents/repo-instructions.ts';

function checkout() {
  const workspace = mkdtempSync(join(tmpdir(), 'tether-ws-'));
  const repo = join(workspace, 'repo');
  mkdirSync(join(repo, 'docs'), { recursive: true });
  const secret = join(mkdtempSync(join(tmpdir(), 'tether-secret-')), 'token');
  writeFileSync(secret, 'CANARY-SECRET');
  return { workspace, repo, secret, read: () => readRepoInstructions(workspace, repo) };
}

describe("the repository's CLAUDE.md", () => {
  it('is read as text, cut at the limit; none, or an empty one, is no instructions', async () => {
    const { repo, read } = checkout();
    expect(await read()).toBeUndefined();
    writeFileSync(join(repo, 'CLAUDE.md'), '  \n');
    expect(await read()).toBeUndefined();
    writeFileSync(join(repo, 'CLAUDE.md'), `Use pnpm.\n${'x'.repeat(REPO_INSTRUCTIONS_MAX_CHARS)}`);
    const found = await read();
    expect(found).toEqual({ text: expect.stringMatching(/^Use pnpm\.\nx+$/) });
    expect((found as { text: string }).text).toHaveLength(REPO_INSTRUCTIONS_MAX_CHARS);
  });

  it('follows a link to another file of the checkout (CLAUDE.md -> AGENTS.md), and no further', async () => {
    const { repo, secret, read } = checkout();
    writeFileSync(join(repo, 'docs', 'AGENTS.md'), 'Run the tests.\n');
    symlinkSync('docs/AGENTS.md', join(repo, 'CLAUDE.md'));
    expect(await read()).toEqual({ text: 'Run the tests.\n' });
    symlinkSync(secret, join(repo, 'docs', 'secret.md'));
    execFileSync('ln', ['-sfn', 'docs/secret.md', join(repo, 'CLAUDE.md')]);
    expect(await read()).toEqual({ leftOut: 'a symlink or a file where a folder or file was expected' });
  });

  it.each([['/proc/self/environ'], ['/dev/zero'], ['../../secret'], ['docs/../../secret']])(
    'leaves out a link to %s: it leads out of the checkout',
    async (target) => {
      const { repo, read } = checkout();
      symlinkSync(target, join(repo, 'CLAUDE.md'));
      expect(await read()).toEqual({ leftOut: 'a symlink leading out of the checkout' });
    },
  );

  it(`leaves out a FIFO without blocking, a 2 GB sparse \
file without reading it, a folder, a link to the secret`, async () => {
    const { repo, secret, read } = checkout();
    execFileSync('mkfifo', [join(repo, 'CLAUDE.md')]);
    expect(await read()).toEqual({ leftOut: 'not a regular file' });
    execFileSync('rm', [join(repo, 'CLAUDE.md')]);
    writeFileSync(join(repo, 'CLAUDE.md'), '');
    truncateSync(join(repo, 'CLAUDE.md'), 2 * 1024 ** 3);
    expect(await read()).toEqual({ leftOut: 'larger than 1048576 bytes' });
    execFileSync('rm', [join(repo, 'CLAUDE.md')]);
    mkdirSync(join(repo, 'CLAUDE.md'));
    expect(await read()).toEqual({ leftOut: 'not a regular file' });
    execFileSync('rmdir', [join(repo, 'CLAUDE.md')]);
    symlinkSync(secret, join(repo, 'CLAUDE.md'));
    expect(JSON.stringify(await read())).not.toContain('CANARY');
  });

  it('a checkout replaced by a link to another folder is not read through', async () => {
    const { workspace, repo, secret } = checkout();
    writeFileSync(join(secret, '..', 'CLAUDE.md'), 'CANARY-SECRET');
    execFileSync('rm', ['-r', repo]);
    symlinkSync(join(secret, '..'), repo);
    expect(await readRepoInstructions(workspace, repo)).toEqual({
      leftOut: 'a symlink or a file where a folder or file was expected',
    });
  });
});
