// The permission policy: the decision order, what "allow always" may cover, file tools checked by
// where their paths really lead, the screenshot tool on loopback only, configuration errors.
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY, decide, matches, parsePolicy, type Verdict } from '../../runner-image/policy.ts';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'tether-policy-')));
const repo = join(root, 'repo');
const outside = join(root, 'outside');
mkdirSync(join(repo, '.git'), { recursive: true });
mkdirSync(join(repo, 'src'));
mkdirSync(join(outside, 'shared'), { recursive: true });
writeFileSync(join(outside, 'secret.txt'), 'TOKEN=x');
symlinkSync('../outside', join(repo, 'out'));
symlinkSync('.git', join(repo, 'g'));
symlinkSync(join(outside, 'new.txt'), join(repo, 'dangling'));
symlinkSync(join(outside, 'shared'), join(repo, 'shared-link'));
symlinkSync(outside, join(repo, 'deep'));
symlinkSync('/proc/1/environ', join(repo, 'environ'));
symlinkSync('loop', join(repo, 'loop'));

const SHOT = 'mcp__tether__screenshot';
type Row = [tool: string, input: Record<string, unknown>, verdict: Verdict];

describe('default policy', () => {
  it.each<Row>([
    ['Read', { file_path: join(repo, 'src/a.ts') }, 'allow'],
    ['Read', { file_path: '/proc/1/environ' }, 'ask'],
    ['Read', { file_path: join(repo, 'environ') }, 'ask'],
    ['Read', { file_path: join(repo, 'out/secret.txt') }, 'ask'],
    ['Read', { file_path: `${repo}/deep/../outside/secret.txt` }, 'ask'],
    ['Read', { file_path: join(repo, 'loop/x') }, 'ask'],
    ['NotebookRead', { notebook_path: join(outside, 'n.ipynb') }, 'ask'],
    ['Grep', { pattern: 'TOKEN' }, 'allow'],
    ['Grep', { pattern: 'TOKEN', path: '/proc/1' }, 'ask'],
    ['LS', { path: repo }, 'allow'],
    ['LS', { path: '/' }, 'ask'],
    ['Glob', { pattern: '**/*.ts' }, 'allow'],
    ['Glob', { pattern: `${repo}/src/**/*.ts` }, 'allow'],
    ['Glob', { pattern: '/etc/*' }, 'ask'],
    ['Glob', { pattern: 'src/**/../../../*' }, 'ask'],
    ['Glob', { pattern: '{..,src}/*' }, 'ask'],
    ['Glob', { pattern: '*', path: join(repo, 'out') }, 'ask'],
    [SHOT, { url: 'http://localhost:3000' }, 'allow'],
    [SHOT, { url: 'http://127.8.0.1:8080/x' }, 'allow'],
    [SHOT, { url: 'https://[::1]:5173/' }, 'allow'],
    [SHOT, { url: 'http://0x7f.1/' }, 'allow'],
    [SHOT, { url: 'https://attacker.example/?t=ghp_x' }, 'ask'],
    [SHOT, { url: 'http://localhost.attacker.example/' }, 'ask'],
    [SHOT, { url: 'http://127.0.0.1@attacker.example/' }, 'ask'],
    [SHOT, { url: 'http://10.0.0.1/' }, 'ask'],
    [SHOT, { url: 'file:///etc/passwd' }, 'ask'],
    [SHOT, {}, 'ask'],
    ['Edit', { file_path: join(repo, 'src/a.ts') }, 'allow'],
    ['Write', { file_path: 'src/new.ts' }, 'allow'],
    ['Write', { file_path: `${repo}/../home/.bashrc` }, 'ask'],
    ['Write', { file_path: join(repo, '.git/hooks/pre-commit') }, 'ask'],
    ['Write', { file_path: join(repo, 'g/config') }, 'ask'],
    ['Write', { file_path: join(repo, 'dangling') }, 'ask'],
    ['Write', { file_path: '~/.gitconfig' }, 'ask'],
    ['Edit', { file_path: '/etc/hosts' }, 'ask'],
    ['Edit', {}, 'ask'],
    ['Bash', { command: 'ls' }, 'ask'],
    ['WebFetch', { url: 'https://example.com' }, 'ask'],
    ['SomethingNew', {}, 'ask'],
  ])('%s %j → %s', (tool, input, verdict) => {
    expect(decide(DEFAULT_POLICY, repo, tool, input).verdict).toBe(verdict);
  });
});

describe('decision order', () => {
  const policy = parsePolicy(
    JSON.stringify({
      allow: [...DEFAULT_POLICY.allow, 'Bash(npm test*)', 'Bash(npm publish --dry-run*)', `Read(${outside}/shared/*)`],
      ask: [...DEFAULT_POLICY.ask, 'Bash(npm publish*)'],
      deny: ['Bash(git push*)', 'Read(/proc/*)', 'WebFetch'],
    }),
  );
  const always = (...tools: string[]) => new Set(tools);

  it.each<[string, string, Record<string, unknown>, Set<string>, Verdict, boolean]>([
    ['a deny rule beats "allow always"', 'Bash', { command: 'git push origin main' }, always('Bash'), 'deny', false],
    ['a bare deny rule beats "allow always" too', 'WebFetch', { url: 'https://x' }, always('WebFetch'), 'deny', false],
    [
      'a deny rule matches where a path really leads',
      'Read',
      { file_path: join(repo, 'environ') },
      always('Read'),
      'deny',
      false,
    ],
    [
      'an ask rule with a pattern beats "allow always"',
      'Bash',
      { command: 'npm publish' },
      always('Bash'),
      'ask',
      false,
    ],
    [
      'an ask rule with a pattern beats an allow rule with one',
      'Bash',
      { command: 'npm publish --dry-run' },
      always(),
      'ask',
      false,
    ],
    [
      'an allow rule with a pattern beats the bare ask rule',
      'Bash',
      { command: 'npm test -- --run' },
      always(),
      'allow',
      false,
    ],
    [
      'an allow rule matches the real path, not the text',
      'Read',
      { file_path: join(repo, 'shared-link/notes.md') },
      always(),
      'allow',
      false,
    ],
    [
      'an allow rule is not fooled by `..` in the text',
      'Read',
      { file_path: `${outside}/shared/../secret.txt` },
      always(),
      'ask',
      false,
    ],
    [
      '"allow always" does not reach beyond the checkout',
      'Read',
      { file_path: join(outside, 'secret.txt') },
      always('Read'),
      'ask',
      false,
    ],
    [
      '"allow always" does not reach into .git',
      'Write',
      { file_path: join(repo, 'g/config') },
      always('Write'),
      'ask',
      false,
    ],
    [
      '"allow always" does not reach other hosts',
      SHOT,
      { url: 'https://attacker.example/' },
      always(SHOT),
      'ask',
      false,
    ],
    ['"allow always" covers the bare ask', 'Bash', { command: 'ls -la' }, always('Bash'), 'allow', false],
    ['"allow always" is per tool', 'WebSearch', { query: 'x' }, always('Bash'), 'ask', true],
    ['a bare ask may be allowed always', 'Bash', { command: 'ls -la' }, always(), 'ask', true],
  ])('%s', (_label, tool, input, granted, verdict, mayBeAllowedAlways) => {
    const ruling = decide(policy, repo, tool, input, granted);
    expect(ruling.verdict).toBe(verdict);
    expect(ruling.always).toBe(mayBeAllowedAlways);
  });

  it('says why in words the phone can show', () => {
    expect(decide(policy, repo, 'Bash', { command: 'git push' }, always('Bash')).reason).toBe(
      'the deny rule Bash(git push*)',
    );
    expect(decide(policy, repo, 'Read', { file_path: '/etc/passwd' }).reason).toBe(
      'reads outside the repository checkout',
    );
    expect(decide(policy, repo, 'Write', { file_path: join(repo, '.git/config') }).reason).toBe('edits inside .git');
  });

  it('without editsInsideRepo, edits are asked and may be allowed always', () => {
    const strict = parsePolicy('{"editsInsideRepo":false}');
    expect(decide(strict, repo, 'Edit', { file_path: join(repo, 'a.ts') })).toMatchObject({
      verdict: 'ask',
      always: true,
    });
    expect(decide(strict, repo, 'Edit', { file_path: join(repo, 'a.ts') }, always('Edit')).verdict).toBe('allow');
    expect(decide(strict, repo, 'Edit', { file_path: '/etc/hosts' }, always('Edit')).verdict).toBe('ask');
  });
});

describe('rules', () => {
  it('match patterns literally apart from *', () => {
    expect(matches('Bash(git status)', 'Bash', 'git status')).toBe(true);
    expect(matches('Bash(git status)', 'Bash', 'git status; rm x')).toBe(false);
    expect(matches('Bash(a.b)', 'Bash', 'axb')).toBe(false);
    expect(matches('Edit(/workspace/repo/docs/*)', 'Edit', '/workspace/repo/docs/x.md')).toBe(true);
    expect(matches('Bash', 'Bash', 'anything')).toBe(true);
    expect(matches('Bash', 'BashOutput', '')).toBe(false);
  });

  it('keep the default ask list when only allow is configured', () => {
    expect(parsePolicy('{"allow":["Read"]}').ask).toEqual(DEFAULT_POLICY.ask);
  });

  it('reject bad configuration naming the field', () => {
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
    ['loop/x', 'ask'],
  ])('Write %s → %s', (path, verdict) => {
    expect(decide(DEFAULT_POLICY, checkout, 'Write', { file_path: path }).verdict).toBe(verdict);
  });
});
