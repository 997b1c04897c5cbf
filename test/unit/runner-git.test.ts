// The runner's git with real git: the locked environment, the private store, snapshots that store
// symlinks as links, and a workspace .git full of hostile configuration that nothing reads.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainGit } from '../support/plain-git.ts';
import { cutDiff, Git } from '../../runner-image/git/store.ts';
import { credentialKey, gitEnvironment } from '../../runner-image/git/env.ts';
import { filesContaining } from '../support/files.ts';
import { hostileGitScript } from '../support/hostile-git.ts';

const TOKEN = 'ghp_canaryCANARYcanary0123456789abcdefAB';
const author = { name: 'Tether', email: 'tether@example.com' };

/** A bare remote with one commit on main, a workspace and the runner's private folder. */
function setup(files: Record<string, string> = {}) {
  const root = mkdtempSync(join(tmpdir(), 'tether-git-unit-'));
  const remote = join(root, 'remote.git');
  mkdirSync(remote);
  plainGit(remote, 'init', '--quiet', '--bare', '--initial-branch=main');
  const seed = join(root, 'seed');
  mkdirSync(seed);
  plainGit(seed, 'init', '--quiet', '--initial-branch=main');
  for (const [path, content] of Object.entries({ 'README.md': '# web\n', '.gitignore': 'ignored/\n', ...files }))
    writeFileSync(join(seed, path), content);
  plainGit(seed, 'add', '.');
  plainGit(seed, 'commit', '--quiet', '-m', 'initial');
  plainGit(seed, 'push', '--quiet', remote, 'main');
  const repo = join(root, 'workspace', 'repo');
  mkdirSync(join(root, 'workspace'));
  const newGit = () =>
    new Git({
      workspace: join(root, 'workspace'),
      checkout: 'repo',
      storeDir: mkdtempSync(join(root, 'store-')),
      token: () => TOKEN,
      author,
      redact: (s) => s,
      path: process.env.PATH!,
    });
  const upstream = (path: string, content: string) => {
    writeFileSync(join(seed, path), content);
    plainGit(seed, 'add', '.');
    plainGit(seed, 'commit', '--quiet', '-m', `add ${path}`);
    plainGit(seed, 'push', '--quiet', remote, 'main');
  };
  return { root, remote, repo, newGit, upstream };
}

describe('git environment', () => {
  it('reads no configuration file the agent can write and locks hooks and fsmonitor', () => {
    const env = gitEnvironment({ path: '/usr/bin:/bin', home: '/var/lib/tether/git/home', author });
    expect(env).toMatchObject({
      HOME: '/var/lib/tether/git/home',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
    });
    const config = Object.fromEntries(
      Array.from({ length: Number(env.GIT_CONFIG_COUNT) }, (_, i) => [
        env[`GIT_CONFIG_KEY_${i}`],
        env[`GIT_CONFIG_VALUE_${i}`],
      ]),
    );
    expect(config).toMatchObject({
      'core.hooksPath': '/dev/null',
      'core.fsmonitor': 'false',
      'credential.helper': '',
      'core.sshCommand': 'ssh -F /dev/null',
      'protocol.allow': 'never',
      'protocol.file.allow': 'always',
    });
    expect(Object.keys(config).some((k) => /extraheader/i.test(k))).toBe(false);
    expect(
      Object.keys(env)
        .filter((k) => !/^GIT_/.test(k))
        .sort(),
    ).toEqual(['HOME', 'LANG', 'PATH']);
  });

  it('scopes the token to the origin of an http(s) forge and gives it to nothing else', () => {
    expect(credentialKey('https://github.com/acme/web.git')).toBe('http.https://github.com/.extraHeader');
    expect(credentialKey('http://127.0.0.1:8080/acme/web.git')).toBe('http.http://127.0.0.1:8080/.extraHeader');
    for (const url of [
      '/srv/git/acme/web.git',
      'git@github.com:acme/web.git',
      'ssh://git@github.com/acme/web.git',
      'ext::sh -c x',
    ]) {
      expect(credentialKey(url)).toBeUndefined();
      expect(
        JSON.stringify(gitEnvironment({ path: '/bin', home: '/h', author, forge: { url, token: TOKEN } })),
      ).not.toContain(Buffer.from(`x-access-token:${TOKEN}`).toString('base64'));
    }
    const env = gitEnvironment({
      path: process.env.PATH!,
      home: tmpdir(),
      author,
      forge: { url: 'https://github.com/acme/web.git', token: TOKEN },
    });
    const header = (url: string) => {
      try {
        return execFileSync('git', ['config', '--get-urlmatch', 'http.extraHeader', url], {
          env,
          encoding: 'utf8',
          cwd: tmpdir(),
        }).trim();
      } catch {
        return '';
      }
    };
    expect(header('https://github.com/acme/other.git')).toBe(
      `Authorization: Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`,
    );
    expect(header('https://github.com.evil.example/acme/web.git')).toBe('');
    expect(header('http://github.com/acme/web.git')).toBe('');
  });
});

describe('runner git', { timeout: 30_000 }, () => {
  it(`makes the checkout from the private store: \
origin without credentials, clean status, no token anywhere`, async () => {
    const { root, repo, remote, newGit } = setup();
    // A Pod's umask: the agent's group shares the workspace.
    const umask = process.umask(0o002);
    try {
      expect(await newGit().prepare(remote, 'main')).toBe('cloned');
    } finally {
      process.umask(umask);
    }
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# web\n');
    // Modes as mkdir(1) and git make them: the umask decides, and the agent's group may write.
    expect(statSync(repo).mode & 0o777).toBe(0o775);
    expect(statSync(join(repo, 'README.md')).mode & 0o777).toBe(0o664);
    expect(statSync(join(repo, '.git')).mode & 0o777).toBe(0o775);
    expect(plainGit(repo, 'remote', 'get-url', 'origin').trim()).toBe(remote);
    expect(plainGit(repo, 'status', '--porcelain')).toBe('');
    expect(plainGit(repo, 'rev-parse', '--abbrev-ref', 'HEAD').trim()).toBe('main');
    expect(plainGit(repo, 'config', '--list', '--local')).not.toMatch(/extraheader|credential|store-/i);
    expect(
      filesContaining(join(root, 'workspace'), [TOKEN, Buffer.from(`x-access-token:${TOKEN}`).toString('base64')]),
    ).toEqual([]);
  });

  it('snapshots symlinks as links, never what they point at', async () => {
    const { repo, remote, newGit } = setup();
    const git = newGit();
    await git.prepare(remote, 'main');
    symlinkSync('.git', join(repo, 'g'));
    symlinkSync('/etc/passwd', join(repo, 'passwd'));
    symlinkSync('/etc', join(repo, 'etc'));
    const snapshot = (await git.changes())!;
    const entries = (await git.run(['ls-tree', snapshot.tree])).split('\n').filter(Boolean);
    expect(
      entries
        .filter((e) => e.startsWith('120000 blob'))
        .map((e) => e.split('\t')[1])
        .sort(),
    ).toEqual(['etc', 'g', 'passwd']);
    const diff = await git.diff(snapshot);
    expect(diff.full).toContain('+/etc/passwd');
    expect(diff.full).not.toContain('root:');
    expect(diff).toMatchObject({ files: 3, lines: diff.full.trimEnd().split('\n').length });
  });

  it('runs nothing the workspace configures and pushes to the real remote only', async () => {
    const { root, repo, remote, newGit } = setup();
    const evil = join(root, 'evil.git');
    plainGit(root, 'init', '--quiet', '--bare', evil);
    const git = newGit();
    await git.prepare(remote, 'main');
    const marker = join(root, 'MARKER');
    execFileSync('sh', ['-c', hostileGitScript({ marker, realUrl: remote, evilUrl: evil })], {
      cwd: repo,
      env: { PATH: process.env.PATH, HOME: join(root, 'workspace', 'home') },
    });
    writeFileSync(join(repo, 'README.md'), '# changed\n');
    const snapshot = (await git.changes())!;
    expect((await git.diff(snapshot)).full).toContain('+# changed');
    const commit = await git.commit(snapshot, 'change\n');
    await git.push(remote, commit, 'tether/s1');
    await git.revert();
    expect(await newGit().prepare(remote, 'main')).toBe('updated');
    expect(existsSync(marker)).toBe(false);
    expect(plainGit(evil, 'for-each-ref')).toBe('');
    expect(plainGit(remote, 'rev-parse', 'tether/s1^{tree}').trim()).toBe(snapshot.tree);
    // The trap is armed: git that reads the checkout's configuration runs it.
    execFileSync('sh', ['-c', hostileGitScript({ marker, realUrl: remote, evilUrl: evil })], {
      cwd: repo,
      env: { PATH: process.env.PATH, HOME: join(root, 'workspace', 'home') },
    });
    writeFileSync(join(repo, 'README.md'), '# again\n');
    plainGit(repo, 'diff');
    expect(readFileSync(marker, 'utf8')).toMatch(/evil\.sh/);
  });

  it('keeps changes on the base they were made on, and moves a clean tree to the latest base', async () => {
    const { repo, remote, newGit, upstream } = setup();
    await newGit().prepare(remote, 'main');
    upstream('up.txt', 'up\n');
    expect(await newGit().prepare(remote, 'main')).toBe('updated');
    expect(readFileSync(join(repo, 'up.txt'), 'utf8')).toBe('up\n');
    writeFileSync(join(repo, 'kept.txt'), 'kept\n');
    upstream('later.txt', 'later\n');
    const git = newGit();
    expect(await git.prepare(remote, 'main')).toBe('kept-changes');
    expect(existsSync(join(repo, 'later.txt'))).toBe(false);
    expect(plainGit(repo, 'status', '--porcelain')).toBe('?? kept.txt\n');
    expect(plainGit(repo, 'rev-parse', 'origin/main').trim()).toBe(plainGit(remote, 'rev-parse', 'main').trim());
    expect((await git.diff((await git.changes())!)).stat).toContain('1 file changed');
  });

  it('ignores a recorded base the forge does not have', async () => {
    const { root, repo, remote, newGit } = setup();
    await newGit().prepare(remote, 'main');
    writeFileSync(join(repo, 'kept.txt'), 'kept\n');
    writeFileSync(join(root, 'workspace', '.tether-repo-base'), `${'a'.repeat(40)}\n`);
    const git = newGit();
    expect(await git.prepare(remote, 'main')).toBe('kept-changes');
    expect(readFileSync(join(root, 'workspace', '.tether-repo-base'), 'utf8').trim()).toBe(
      plainGit(remote, 'rev-parse', 'main').trim(),
    );
  });

  it('reverts to the base: changed files restored, new files gone, ignored files kept', async () => {
    const { repo, remote, newGit } = setup();
    const git = newGit();
    await git.prepare(remote, 'main');
    writeFileSync(join(repo, 'README.md'), 'changed\n');
    mkdirSync(join(repo, 'src'));
    writeFileSync(join(repo, 'src', 'new.ts'), 'new\n');
    mkdirSync(join(repo, 'ignored'));
    writeFileSync(join(repo, 'ignored', 'cache'), 'keep\n');
    await git.revert();
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# web\n');
    expect(existsSync(join(repo, 'src'))).toBe(false);
    expect(readFileSync(join(repo, 'ignored', 'cache'), 'utf8')).toBe('keep\n');
    expect(await git.changes()).toBeUndefined();
  });

  it('refuses a checkout that is a symlink and a branch name that is not one', async () => {
    const { root, repo, remote, newGit } = setup();
    symlinkSync(root, repo);
    await expect(newGit().prepare(remote, 'main')).rejects.toThrow(/is not a folder/);
    await expect(setup().newGit().prepare(remote, 'main..x')).rejects.toThrow(/not a valid branch name/);
  });
});

it('cutDiff keeps whole lines and says how many are left out', () => {
  const full = Array.from({ length: 1000 }, (_, i) => `+line ${i}`).join('\n') + '\n';
  const cut = cutDiff(full, 2000);
  expect(cut.length).toBeLessThanOrEqual(2000);
  const kept = cut.split('\n').filter((l) => l.startsWith('+line')).length;
  expect(cut).toContain(`… diff cut by Tether: ${1000 - kept} more lines are not shown here`);
  expect(cutDiff('+a\n', 2000)).toBe('+a\n');
});
