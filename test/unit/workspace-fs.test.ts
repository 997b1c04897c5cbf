import { execFileSync, spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
  lstatSync,
  readlinkSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  components,
  readWorkspaceFile,
  WorkspaceDir,
  WorkspaceRefused,
  withWorkspaceDir,
} from '../../runner-image/workspace/fs.ts';

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'wsfs-'));
  const secret = mkdtempSync(join(tmpdir(), 'wsfs-secret-'));
  writeFileSync(join(secret, 'token'), 'CANARY-TOKEN');
  mkdirSync(join(root, 'repo', 'src'), { recursive: true });
  writeFileSync(join(root, 'repo', 'src', 'a.txt'), 'hello');
  return { root, secret };
}

describe('workspace-fs', () => {
  it('reads a regular file through real folders', async () => {
    const { root } = workspace();
    const read = await readWorkspaceFile(root, 'repo/src/a.txt', 100);
    expect(read?.data.toString()).toBe('hello');
    expect(await readWorkspaceFile(root, 'repo/src/missing', 100)).toBeUndefined();
    expect(await readWorkspaceFile(root, 'repo/nothing/here', 100)).toBeUndefined();
  });

  it('refuses a symlink as the last component, in the middle, and dangling', async () => {
    const { root, secret } = workspace();
    symlinkSync(join(secret, 'token'), join(root, 'repo', 'CLAUDE.md'));
    symlinkSync(secret, join(root, 'repo', 'linked'));
    symlinkSync('/proc/self/environ', join(root, 'repo', 'env'));
    await expect(readWorkspaceFile(root, 'repo/CLAUDE.md', 100)).rejects.toBeInstanceOf(WorkspaceRefused);
    await expect(readWorkspaceFile(root, 'repo/linked/token', 100)).rejects.toBeInstanceOf(WorkspaceRefused);
    await expect(readWorkspaceFile(root, 'repo/env', 100)).rejects.toBeInstanceOf(WorkspaceRefused);
  });

  it('refuses a FIFO without blocking, and a file over the limit without reading it', async () => {
    const { root } = workspace();
    execFileSync('mkfifo', [join(root, 'repo', 'fifo')]);
    await expect(readWorkspaceFile(root, 'repo/fifo', 100)).rejects.toThrow(/not a regular file/);
    writeFileSync(join(root, 'repo', 'sparse'), '');
    truncateSync(join(root, 'repo', 'sparse'), 2 * 1024 ** 3);
    await expect(readWorkspaceFile(root, 'repo/sparse', 1024)).rejects.toThrow(/larger than 1024 bytes/);
  });

  it('refuses .., . and absolute paths', async () => {
    expect(() => components('../x')).toThrow(WorkspaceRefused);
    expect(() => components('a/./b')).toThrow(WorkspaceRefused);
    expect(() => components('/etc/passwd')).toThrow(WorkspaceRefused);
    expect(components('a//b/')).toEqual(['a', 'b']);
    const { root } = workspace();
    await expect(withWorkspaceDir(root, 'repo', (dir) => dir.readFile('../x', 10))).rejects.toBeInstanceOf(
      WorkspaceRefused,
    );
    await expect(withWorkspaceDir(root, 'repo', (dir) => dir.readFile('src/a.txt', 10))).rejects.toBeInstanceOf(
      WorkspaceRefused,
    );
  });

  it('writes over a planted symlink by replacing it, never through it', async () => {
    const { root, secret } = workspace();
    symlinkSync(join(secret, 'token'), join(root, 'repo', 'marker'));
    await withWorkspaceDir(root, 'repo', (dir) => dir.writeFile('marker', 'mine\n'));
    expect(readFileSync(join(secret, 'token'), 'utf8')).toBe('CANARY-TOKEN');
    expect(lstatSync(join(root, 'repo', 'marker')).isFile()).toBe(true);
  });

  it('makeDir refuses a symlink in its place; remove deletes links, not their targets', async () => {
    const { root, secret } = workspace();
    symlinkSync(secret, join(root, 'repo', 'media'));
    await expect(withWorkspaceDir(root, 'repo', (dir) => dir.makeDir('media'))).rejects.toBeInstanceOf(
      WorkspaceRefused,
    );
    mkdirSync(join(root, 'repo', 'tree', 'deep'), { recursive: true });
    symlinkSync(secret, join(root, 'repo', 'tree', 'deep', 'out'));
    await withWorkspaceDir(root, 'repo', async (dir) => {
      await dir.remove('tree');
      await dir.remove('media');
    });
    expect(existsSync(join(root, 'repo', 'tree'))).toBe(false);
    expect(readFileSync(join(secret, 'token'), 'utf8')).toBe('CANARY-TOKEN');
  });

  it('lists entries with their own types and reads links as text', async () => {
    const { root, secret } = workspace();
    symlinkSync(secret, join(root, 'repo', 'out'));
    const listed = await withWorkspaceDir(root, 'repo', async (dir) => ({
      entries: await dir.entries(),
      link: await dir.readLink('out'),
    }));
    expect(listed.entries.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: 'out', type: 'symlink' },
      { name: 'src', type: 'dir' },
    ]);
    expect(listed.link).toBe(secret);
    expect(readlinkSync(join(root, 'repo', 'out'))).toBe(secret);
  });

  it('never reads the secret while a folder is swapped for a symlink over and over', async () => {
    const { root, secret } = workspace();
    const repo = join(root, 'repo');
    writeFileSync(join(secret, 'a.txt'), 'CANARY-TOKEN');
    // A loop that swaps repo/src with a symlink to the secret folder as fast as it can.
    const swapper = spawn(
      'bash',
      ['-c', `cd ${repo}; while :; do mv src real; ln -s ${secret} src; rm src; mv real src; done`],
      { stdio: 'ignore' },
    );
    try {
      let reads = 0;
      let refused = 0;
      for (let i = 0; i < 400; i++) {
        const read = await readWorkspaceFile(root, 'repo/src/a.txt', 100).catch((error: unknown) => {
          if (error instanceof WorkspaceRefused) refused++;
          return undefined;
        });
        if (read) {
          reads++;
          expect(read.data.toString()).toBe('hello');
        }
      }
      expect(reads + refused).toBeGreaterThan(0);
    } finally {
      swapper.kill('SIGKILL');
    }
  });

  it(`openEntry opens what an entry is at one instant: a folder, \
a file read whole, a link as text, a FIFO unopened`, async () => {
    const { root, secret } = workspace();
    const repo = join(root, 'repo');
    symlinkSync(secret, join(repo, 'out'));
    execFileSync('mkfifo', [join(repo, 'fifo')]);
    writeFileSync(join(repo, 'sparse'), '');
    truncateSync(join(repo, 'sparse'), 2 * 1024 ** 3);
    await withWorkspaceDir(root, 'repo', async (dir) => {
      const src = await dir.openEntry('src', 100);
      expect(src?.type).toBe('dir');
      if (src?.type === 'dir')
        expect((await src.dir.entries().finally(() => src.dir.close())).map((e) => e.name)).toEqual(['a.txt']);
      expect(await dir.openEntry('out', 100)).toEqual({ type: 'symlink', target: secret });
      expect(await dir.openEntry('fifo', 100)).toEqual({ type: 'other' });
      const sparse = await dir.openEntry('sparse', 100);
      expect(sparse?.type === 'file' && sparse.data === undefined && sparse.stat.size).toBe(2 * 1024 ** 3);
      expect(await dir.openEntry('missing', 100)).toBeUndefined();
      const src2 = await dir.dir('src');
      expect(await src2.openEntry('a.txt', 100).finally(() => src2.close())).toMatchObject({
        type: 'file',
        data: Buffer.from('hello'),
      });
    });
  });

  it('opens the trusted root only as a folder', async () => {
    const { root } = workspace();
    await expect(WorkspaceDir.root(join(root, 'repo', 'src', 'a.txt'))).rejects.toThrow();
  });
});
