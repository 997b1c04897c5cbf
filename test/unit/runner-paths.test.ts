// Where a path really leads: symlinks (dangling too), `..` after a symlink, loops, missing tails.
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isInside, realPath } from '../../runner-image/workspace/paths.ts';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'tether-paths-')));
const repo = join(root, 'repo');
const outside = join(root, 'outside');
mkdirSync(join(repo, 'src'), { recursive: true });
mkdirSync(join(outside, 'sub'), { recursive: true });
writeFileSync(join(outside, 'secret.txt'), 'x');
symlinkSync('../outside', join(repo, 'out'));
symlinkSync(join(outside, 'sub'), join(repo, 'deep'));
symlinkSync(join(outside, 'new.txt'), join(repo, 'dangling'));
symlinkSync('missing-dir/also-missing', join(repo, 'dangling-relative'));
symlinkSync('loop', join(repo, 'loop'));
// The repository reached through a symlink of its own: the answer is still the real path.
symlinkSync(repo, join(root, 'repo-link'));

describe('realPath', () => {
  it.each([
    ['an existing file, relative', 'src', join(repo, 'src')],
    ['a file that does not exist yet', 'src/new/file.ts', join(repo, 'src/new/file.ts')],
    ['through a symlink to a directory elsewhere', 'out/secret.txt', join(outside, 'secret.txt')],
    ['`..` after a symlink, as the kernel applies it', 'deep/../secret.txt', join(outside, 'secret.txt')],
    ['`..` after a symlink, below a missing file', 'deep/../nothing/x', join(outside, 'nothing/x')],
    ['a dangling symlink: writing it creates its target', 'dangling', join(outside, 'new.txt')],
    ['a dangling relative symlink', 'dangling-relative', join(repo, 'missing-dir/also-missing')],
    ['an absolute path, lexical `..`', `${repo}/src/../../outside`, outside],
    ['the repository through a symlink', join(root, 'repo-link', 'src'), join(repo, 'src')],
    ['trailing and doubled slashes', 'src//new/', join(repo, 'src/new')],
  ])('%s', (_label, path, expected) => {
    expect(realPath(path, repo)).toBe(expected);
  });

  it.each([
    ['a symlink loop', 'loop/x'],
    ['a home-relative path the tool would expand', '~/.bashrc'],
  ])('is unknown for %s', (_label, path) => {
    expect(realPath(path, repo)).toBeUndefined();
  });

  it('isInside compares whole components', () => {
    expect(isInside(repo, repo)).toBe(true);
    expect(isInside(repo, join(repo, 'a'))).toBe(true);
    expect(isInside(repo, `${repo}-other/a`)).toBe(false);
    expect(isInside(repo, root)).toBe(false);
  });
});
