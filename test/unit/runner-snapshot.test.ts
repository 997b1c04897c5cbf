// The snapshot walk and tree building with real git: ordinary trees give the tree `git add -A` +
// `write-tree` gives; hostile ones (FIFOs, a /dev/zero link, a 2 GB sparse file, a folder swapped
// for a symlink while the walk runs) neither block, nor read without end, nor leave the checkout.
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Git } from '../../runner-image/git/store.ts';
import { SNAPSHOT_LIMITS } from '../../runner-image/workspace/snapshot.ts';

const author = { name: 'Tether', email: 'tether@example.com' };
const CANARY = 'CANARY-the-supervisor-only-0123456789';
const env = {
  PATH: process.env.PATH,
  HOME: tmpdir(),
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@t',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@t',
};
/**
 * Bytes this process has read so far (/proc/self/io `rchar`): a read without end shows here, whatever the clock says.
 */
const bytesRead = () => Number(/^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
const git = (cwd: string, args: string[], extra: Record<string, string> = {}) =>
  execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...env, ...extra } });

/** Writes files (path → content; `-> target` makes a symlink, a trailing `*` an executable). */
function plant(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    const full = join(root, path);
    mkdirSync(join(full, '..'), { recursive: true });
    rmSync(full, { force: true, recursive: true });
    if (content.startsWith('-> ')) symlinkSync(content.slice(3), full);
    else writeFileSync(full, content.replace(/\*$/, ''), { mode: content.endsWith('*') ? 0o755 : 0o644 });
  }
}

/** A remote holding `files` on main, a workspace, and the runner's git with a store folder the test knows. */
async function setup(files: Record<string, string>, limits = SNAPSHOT_LIMITS) {
  const root = mkdtempSync(join(tmpdir(), 'tether-snapshot-'));
  const seed = join(root, 'seed');
  mkdirSync(seed);
  git(seed, ['init', '--quiet', '--initial-branch=main']);
  plant(seed, files);
  git(seed, ['add', '-A', '-f']);
  git(seed, ['commit', '--quiet', '-m', 'base']);
  const remote = join(root, 'remote.git');
  git(root, ['clone', '--quiet', '--bare', seed, remote]);
  const workspace = join(root, 'workspace');
  mkdirSync(workspace);
  const storeDir = join(root, 'store');
  const runner = new Git({
    workspace,
    checkout: 'repo',
    storeDir,
    author,
    redact: (s) => s,
    path: process.env.PATH!,
    limits,
  });
  await runner.prepare(remote, 'main');
  const repo = join(workspace, 'repo');
  const store = (...args: string[]) => git(root, args, { GIT_DIR: join(storeDir, 'store.git') });
  /** The old way: `add -A` of the work tree into an index of the base, then `write-tree`. */
  const addAll = () => {
    const extra = {
      GIT_DIR: join(storeDir, 'store.git'),
      GIT_WORK_TREE: repo,
      GIT_INDEX_FILE: join(root, 'old.index'),
    };
    rmSync(extra.GIT_INDEX_FILE, { force: true });
    git(repo, ['read-tree', 'main'], extra);
    git(repo, ['add', '-A'], extra);
    return git(repo, ['write-tree'], extra).trim();
  };
  return { root, workspace, repo, remote, runner, store, addAll };
}

const BASE = {
  'README.md': '# web\n',
  'bin/run': '#!/bin/sh\necho run\n*',
  'src/app/main.ts': 'export {};\n',
  'src/app/link': '-> main.ts',
  'docs/guide.md': 'guide\n',
  '.gitignore': '# build output\n*.log\n!keep.log\nbuild/\n/dist\n**/tmp/**\ncache\\ with\\ space\ntrailing\\ \n',
  'src/.gitignore': '!important.log\n*.gen.ts\n',
  'tracked.log': 'tracked although ignored\n',
  'build/tracked.txt': 'tracked in an ignored folder\n',
  'with space/a "quoted" name.txt': 'spaces and quotes\n',
  'line\nfeed.txt': 'a newline in the name\n',
  'ünïcödé/名前.txt': 'UTF-8\n',
  'back\\slash.txt': 'a backslash\n',
};

describe('the snapshot walk', { timeout: 60_000 }, () => {
  it(`gives the tree \`git add -A\` gives: folders, executables, symlinks, ignore rules, tracked-but-ignored files, \
odd names`, async () => {
    const { repo, runner, addAll, store } = await setup(BASE);
    expect(await runner.changes()).toBeUndefined();
    plant(repo, {
      'README.md': '# changed\n',
      'src/app/main.ts': 'export const x = 1;\n',
      'new/deep/er/file.txt': 'new\n',
      'tracked.log': 'still tracked\n',
      'other.log': 'ignored\n',
      'keep.log': 'negated, so kept\n',
      'src/important.log': 'negated below\n',
      'src/x.gen.ts': 'ignored below\n',
      'build/new.txt': 'in an ignored folder\n',
      'build/tracked.txt': 'tracked, changed\n',
      'dist/out.js': 'ignored at the top\n',
      'src/dist/kept.js': 'not anchored here\n',
      'a/tmp/b/c.txt': 'ignored by **\n',
      'cache with space': 'ignored by an escaped space\n',
      'trailing ': 'ignored by an escaped trailing space\n',
      'docs/guide.md': '-> ../README.md',
      'links/dir': '-> ../src',
      'links/abs': '-> /etc/passwd',
      'links/dangling': '-> nowhere',
      'more/名前 2.txt': 'UTF-8 again\n',
      'more/"starts with a quote': 'q\n',
      'more/new\nline': 'n\n',
      'more/tab\there': 't\n',
      'only-ignored/x.log': 'a folder holding ignored files only\n',
    });
    mkdirSync(join(repo, 'empty/folder'), { recursive: true });
    chmodSync(join(repo, 'README.md'), 0o755);
    chmodSync(join(repo, 'bin/run'), 0o644);
    rmSync(join(repo, 'with space'), { recursive: true });
    const snapshot = (await runner.changes())!;
    expect(snapshot.tree).toBe(addAll());
    expect(snapshot.leftOut).toEqual([]);
    expect(store('ls-tree', snapshot.tree, 'links/dir')).toMatch(/^120000 blob /);
    rmSync(join(repo, 'src'), { recursive: true });
    rmSync(join(repo, 'tracked.log'));
    expect((await runner.changes())!.tree).toBe(addAll());
  });

  it(`leaves out and names what git would refuse or the \
agent could not read; keeps a submodule at the base`, async () => {
    const { repo, runner, store } = await setup({ 'README.md': '# web\n' }, { ...SNAPSHOT_LIMITS, fileBytes: 1000 });
    plant(repo, {
      'big.bin': 'x'.repeat(1001),
      'ok.txt': 'ok\n',
      '.GIT/config': 'x\n',
      'a/git~1/x': 'x\n',
      'nested/.git/HEAD': 'ref: x\n',
      'nested/inside.txt': 'x\n',
    });
    plant(repo, { 'private.txt': CANARY });
    chmodSync(join(repo, 'private.txt'), 0o600);
    execFileSync('mkfifo', [join(repo, 'fifo')]);
    const snapshot = (await runner.changes())!;
    expect(store('ls-tree', '-r', '--name-only', snapshot.tree).split('\n').filter(Boolean).sort()).toEqual([
      'README.md',
      'ok.txt',
    ]);
    expect(snapshot.leftOut.sort()).toEqual([
      '.GIT (a name git refuses)',
      'a/git~1 (a name git refuses)',
      'big.bin (larger than 1000 bytes)',
      'fifo (not a regular file, folder or symlink)',
      'nested (a nested repository)',
      'private.txt (readable by the runner only)',
    ]);
  });

  it('refuses a checkout over the limits, with a message that says which', async () => {
    const { repo, runner } = await setup(
      { 'README.md': '# web\n' },
      { ...SNAPSHOT_LIMITS, entries: 5, totalBytes: 100 },
    );
    plant(repo, { 'a.txt': 'x'.repeat(60), 'b.txt': 'x'.repeat(60) });
    await expect(runner.changes()).rejects.toThrow(/more than 100 bytes/);
    plant(repo, Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`f${i}`, ''])));
    rmSync(join(repo, 'a.txt'));
    await expect(runner.changes()).rejects.toThrow(/more than 5 files and folders/);
  });
});

describe('a hostile checkout', { timeout: 60_000 }, () => {
  for (const [kind, make] of [
    ['a FIFO', (path: string) => execFileSync('mkfifo', [path])],
    ['a symlink to /dev/zero', (path: string) => symlinkSync('/dev/zero', path)],
    ['a 2 GB sparse file', (path: string) => (writeFileSync(path, ''), truncateSync(path, 2 * 1024 ** 3))],
  ] as const) {
    it(`${kind} at the base marker, a tracked file, a new file, .gitignore and .gitattributes: \
the next command starts, the snapshot ends`, async () => {
      const { workspace, repo, remote, runner, store } = await setup({ 'README.md': '# web\n', 'sub/a.txt': 'a\n' });
      for (const path of [
        join(workspace, '.tether-repo-base'),
        join(repo, 'README.md'),
        join(repo, 'new'),
        join(repo, '.gitignore'),
        join(repo, 'sub/.gitignore'),
        join(repo, '.gitattributes'),
      ]) {
        rmSync(path, { force: true });
        make(path);
      }
      const before = bytesRead();
      const snapshot = (await runner.changes())!;
      const names = store('ls-tree', '-r', '--name-only', snapshot.tree).split('\n').filter(Boolean).sort();
      expect(names).toEqual(
        kind.includes('symlink')
          ? ['.gitattributes', '.gitignore', 'README.md', 'new', 'sub/.gitignore', 'sub/a.txt']
          : ['sub/a.txt'],
      );
      // The next command on this workspace: its runner reads the marker, snapshots, writes the checkout.
      const next = new Git({
        workspace,
        checkout: 'repo',
        storeDir: join(workspace, '..', 'store-next'),
        author,
        redact: (s) => s,
        path: process.env.PATH!,
      });
      expect(await next.prepare(remote, 'main')).toBe('kept-changes');
      await next.revert();
      expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# web\n');
      expect(await next.changes()).toBeUndefined();
      expect(bytesRead() - before).toBeLessThan(64 * 1024 ** 2);
    });
  }

  it('never takes a file from a folder swapped for a symlink while the walk runs', async () => {
    const { repo, runner, store } = await setup({ 'README.md': '# web\n' });
    const secret = mkdtempSync(join(tmpdir(), 'tether-secret-'));
    writeFileSync(join(secret, 'x.txt'), CANARY);
    writeFileSync(join(secret, 'token'), CANARY);
    const pairs = 20;
    for (let i = 0; i < pairs; i++) {
      plant(repo, { [`d${i}/x.txt`]: `mine ${i}\n`, [`l${i}`]: `-> ${secret}` });
    }
    // renameat2(RENAME_EXCHANGE) in a loop: each dN and lN trade places atomically, over and over.
    const renameat2 = arch() === 'arm64' ? 276 : 316;
    const swapper = spawn(
      'perl',
      [
        '-e',
        `chdir $ARGV[0] or die; while (1) { for my $i (0..${pairs - 1}) { syscall(${renameat2}, -100, "d$i", -100, ` +
          `"l$i", 2) == 0 or die "renameat2: $!" } }`,
        repo,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    swapper.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      let taken = 0;
      for (let round = 0; round < 12; round++) {
        const snapshot = await runner.changes().catch((error: unknown) => {
          expect(String(error)).toMatch(/kept changing while the checkout was read/);
          return undefined;
        });
        if (!snapshot) continue;
        taken++;
        const listing = store('ls-tree', '-r', snapshot.tree);
        expect(listing).not.toMatch(/\ttoken$/m);
        for (const line of listing.split('\n').filter(Boolean)) {
          expect(store('cat-file', 'blob', line.split(/\s+/)[2]!)).not.toContain(CANARY);
        }
      }
      expect(taken).toBeGreaterThan(0);
      expect(swapper.exitCode, stderr).toBeNull();
      // The checkout written back while the swaps go on (until the revert removes a pair): nothing
      // lands in, or goes from, the secret folder.
      await runner.revert();
      expect(readdirSync(secret).sort()).toEqual(['token', 'x.txt']);
      expect(readFileSync(join(secret, 'x.txt'), 'utf8')).toBe(CANARY);
    } finally {
      swapper.kill('SIGKILL');
    }
  });

  it('writes the checkout through no symlink and past a FIFO at .gitattributes', async () => {
    const { repo, runner } = await setup({ 'README.md': '# web\n', 'src/app.txt': 'app\n' });
    const secret = mkdtempSync(join(tmpdir(), 'tether-secret-'));
    writeFileSync(join(repo, 'README.md'), 'changed\n');
    execFileSync('mkfifo', [join(repo, '.gitattributes')]);
    rmSync(join(repo, 'src'), { recursive: true });
    symlinkSync(secret, join(repo, 'src'));
    await runner.revert();
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# web\n');
    expect(readFileSync(join(repo, 'src/app.txt'), 'utf8')).toBe('app\n');
    expect(existsSync(join(secret, 'app.txt'))).toBe(false);
  });
});
