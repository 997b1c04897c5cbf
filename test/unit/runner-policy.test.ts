// The permission policy: defaults, edits inside the repo, patterns, configuration errors.
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY, decide, isInside, matches, parsePolicy, physicalPath } from '../../runner-image/policy.ts';

const repo = '/workspace/repo';

describe('permission policy', () => {
  it.each([
    ['Read', { file_path: '/etc/passwd' }, 'allow'],
    ['Grep', { pattern: 'x' }, 'allow'],
    ['mcp__tether__screenshot', { url: 'http://localhost:3000' }, 'allow'],
    ['Edit', { file_path: '/workspace/repo/src/a.ts' }, 'allow'],
    ['Write', { file_path: 'src/new.ts' }, 'allow'],
    ['Write', { file_path: '/workspace/repo/../home/.bashrc' }, 'ask'],
    ['Write', { file_path: '/workspace/repo/.git/hooks/pre-commit' }, 'ask'],
    ['Edit', { file_path: '/etc/hosts' }, 'ask'],
    ['Bash', { command: 'ls' }, 'ask'],
    ['WebFetch', { url: 'https://example.com' }, 'ask'],
    ['SomethingNew', {}, 'ask'],
  ])('%s %j → %s by default', (tool, input, verdict) => {
    expect(decide(DEFAULT_POLICY, repo, tool, input)).toBe(verdict);
  });

  it('is configurable with Tool(pattern) rules; deny beats allow beats ask', () => {
    const policy = parsePolicy('{"allow":["Read","Bash(npm test*)"],"deny":["Bash(rm -rf *)","WebFetch"],"editsInsideRepo":false}');
    expect(decide(policy, repo, 'Bash', { command: 'npm test -- --run' })).toBe('allow');
    expect(decide(policy, repo, 'Bash', { command: 'npm install' })).toBe('ask');
    expect(decide(policy, repo, 'Bash', { command: 'rm -rf /' })).toBe('deny');
    expect(decide(policy, repo, 'WebFetch', { url: 'https://x' })).toBe('deny');
    expect(decide(policy, repo, 'Edit', { file_path: '/workspace/repo/a.ts' })).toBe('ask');
    expect(policy.ask).toEqual(DEFAULT_POLICY.ask);
  });

  it('matches patterns literally apart from *', () => {
    expect(matches('Bash(git status)', 'Bash', { command: 'git status' })).toBe(true);
    expect(matches('Bash(git status)', 'Bash', { command: 'git status; rm x' })).toBe(false);
    expect(matches('Bash(a.b)', 'Bash', { command: 'axb' })).toBe(false);
    expect(matches('Edit(/workspace/repo/docs/*)', 'Edit', { file_path: '/workspace/repo/docs/x.md' })).toBe(true);
  });

  it('rejects bad configuration naming the field', () => {
    expect(() => parsePolicy('not json')).toThrow(/TETHER_PERMISSION_POLICY is not JSON/);
    expect(() => parsePolicy('{"allow":"Bash"}')).toThrow(/TETHER_PERMISSION_POLICY\.allow/);
    expect(() => parsePolicy('{"alow":[]}')).toThrow(/TETHER_PERMISSION_POLICY/);
  });
});

describe('edits inside the repository are judged on disk, not by spelling', () => {
  const root = mkdtempSync(join(tmpdir(), 'tether-policy-'));
  const checkout = join(root, 'repo');
  mkdirSync(join(checkout, '.git'), { recursive: true });
  writeFileSync(join(checkout, '.git', 'config'), '[core]\n');
  mkdirSync(join(checkout, 'src'));
  mkdirSync(join(root, 'outside'));
  symlinkSync('.git', join(checkout, 'g'));
  symlinkSync('../outside', join(checkout, 'out'));
  symlinkSync(join(root, 'outside', 'new.txt'), join(checkout, 'dangling'));
  symlinkSync('src', join(checkout, 'source'));
  symlinkSync('loop', join(checkout, 'loop'));

  it.each([
    ['g/config', 'ask'],
    ['g/hooks/pre-commit', 'ask'],
    [join(checkout, 'g', 'config'), 'ask'],
    ['out/x.txt', 'ask'],
    ['dangling', 'ask'],
    ['src/../g/config', 'ask'],
    ['source/a.ts', 'allow'],
    ['src/new/deep/file.ts', 'allow'],
    ['loop/x', 'allow'],
  ])('Write %s → %s', (path, verdict) => {
    expect(decide(DEFAULT_POLICY, checkout, 'Write', { file_path: path })).toBe(verdict);
  });

  it('follows symlinks part by part, as the kernel does', () => {
    expect(physicalPath(join(checkout, 'g', 'config'))).toBe(join(realpathSync(checkout), '.git', 'config'));
    expect(physicalPath(`${checkout}/out/../repo/src`)).toBe(join(realpathSync(root), 'repo', 'src'));
    expect(physicalPath(join(checkout, 'dangling'))).toBe(join(realpathSync(root), 'outside', 'new.txt'));
    expect(isInside(checkout, 'g/config')).toBe(true);
    expect(isInside(join(checkout, '.git'), join(checkout, 'g', 'config'))).toBe(true);
    expect(isInside(checkout, 'out/x')).toBe(false);
  });
});
