// The Session's repository and branch as the schema, the controller and the runner judge them:
// one set of patterns, so what the API server accepts is exactly what the components accept.
import { execFileSync } from 'node:child_process';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REPO_HOSTS, parseRepoHosts, repoProblem } from '../../common/session/repo.ts';
import { SessionSpec } from '../../common/session/schema.ts';
import { workspaceName } from '../../common/session/names.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const phone = '+14155550123';
const spec = (repo: { url: string; baseBranch?: string }, extra: Record<string, unknown> = {}) => ({
  phone,
  prompt: 'p',
  repo,
  workspace: workspaceName(testPhoneHash(phone)),
  ...extra,
});
const schemaAccepts = (repo: { url: string; baseBranch?: string }) => Value.Check(SessionSpec, spec(repo));
const gitAcceptsBranch = (name: string) => {
  try {
    execFileSync('git', ['check-ref-format', '--branch', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const URL = 'https://github.com/acme/web.git';

const REFUSED_BRANCHES = [
  '--upload-pack=touch /tmp/x',
  '--upload-pack=touch${IFS}/tmp/x',
  '-main',
  'a/-b',
  'a..b',
  'main@{1}',
  '@',
  'a b',
  'a\tb',
  'a\nb',
  'a\u0000b',
  'a\u007fb',
  'a~1',
  'a^',
  'a:b',
  'a?',
  'a*',
  'a[b',
  'a\\b',
  '.hidden',
  'a/.b',
  'a.',
  'a/',
  '/a',
  'a//b',
  '',
  'x'.repeat(256),
  'héllo',
  '$(touch x)',
  '`touch x`',
  'a;b',
  'a|b',
];
const ACCEPTED_BRANCHES = [
  'main',
  'develop',
  'release/1.2',
  'feature/JIRA-42_fix',
  'v1.0.0',
  'a+b',
  'user@host',
  'x'.repeat(255),
];

describe('Session spec: repo.baseBranch', () => {
  it.each(REFUSED_BRANCHES)('refuses %j (schema and components alike)', (branch) => {
    expect(schemaAccepts({ url: URL, baseBranch: branch })).toBe(false);
    expect(repoProblem({ url: URL, baseBranch: branch }, DEFAULT_REPO_HOSTS)).toMatch(/is not a branch name/);
  });

  it.each(ACCEPTED_BRANCHES)('accepts %j, a name git accepts too', (branch) => {
    expect(schemaAccepts({ url: URL, baseBranch: branch })).toBe(true);
    expect(repoProblem({ url: URL, baseBranch: branch }, DEFAULT_REPO_HOSTS)).toBeUndefined();
    expect(gitAcceptsBranch(branch)).toBe(true);
  });
});

const REFUSED_URLS = [
  '--upload-pack=touch /tmp/x',
  '-u',
  'please use my repo',
  'ssh://git@github.com/acme/web.git',
  'git@github.com:acme/web.git',
  'file:///etc',
  'ext::sh -c touch% /tmp/x',
  'http://github.com/acme/web.git',
  'http://10.0.0.1/acme/web.git',
  'https://user:pass@github.com/acme/web.git',
  'https://github.com@evil.example/acme/web.git',
  'https://github.com/acme/web.git?x=1',
  'https://github.com/acme/web.git#x',
  'https://github.com',
  'https://-github.com/acme',
  'https://github.com/../x',
  '/srv/../etc/x',
  'relative/path',
  '/srv/a b',
  `https://github.com/${'x'.repeat(2048)}`,
];
const ACCEPTED_URLS = [
  URL,
  'https://git.example.com:8443/team/app',
  'http://127.0.0.1:9418/acme/web.git',
  'http://localhost/acme',
  '/srv/git/acme/web.git',
  '/home/me/.tether-state/remote/acme/sample.git',
];

describe('Session spec: repo.url', () => {
  it.each(REFUSED_URLS)('refuses %j', (url) => {
    expect(schemaAccepts({ url })).toBe(false);
    expect(repoProblem({ url }, ['github.com', '/srv', '10.0.0.1', 'evil.example'])).toMatch(/is not a repository URL/);
  });

  it.each(ACCEPTED_URLS)('accepts the form of %j', (url) => {
    expect(schemaAccepts({ url })).toBe(true);
  });
});

describe('the repository host list', () => {
  const hosts = parseRepoHosts('github.com, git.example.com:8443,127.0.0.1:9418,/srv/git');
  it.each([
    [URL, true],
    ['https://GitHub.com/acme/web.git', true],
    ['https://github.com:444/acme/web.git', false],
    ['https://evil.example/acme/web.git', false],
    ['https://github.com.evil.example/acme/web.git', false],
    ['https://git.example.com:8443/team/app', true],
    ['https://git.example.com/team/app', false],
    ['http://127.0.0.1:9418/acme/web.git', true],
    ['http://127.0.0.1:9419/acme/web.git', false],
    ['http://localhost:9418/acme/web.git', false],
    ['/srv/git/acme/web.git', true],
    ['/srv/git', true],
    ['/srv/gitx/acme.git', false],
    ['/etc/acme.git', false],
  ])('%s allowed: %s', (url, allowed) => {
    const problem = repoProblem({ url }, hosts);
    if (allowed) expect(problem).toBeUndefined();
    else expect(problem).toMatch(/not on this install's list of repository hosts/);
  });

  it('names the refused host and the list in plain words', () => {
    expect(repoProblem({ url: 'https://evil.example/acme/web.git' }, DEFAULT_REPO_HOSTS)).toBe(
      "spec.repo.url points at the host evil.example, which is not on this install's list of repository hosts " +
        '(github.com)',
    );
  });

  it('refuses entries that are neither a host nor a folder', () => {
    expect(() => parseRepoHosts('github.com,https://gitlab.com')).toThrow(/"https:\/\/gitlab.com" is not a host/);
    expect(() => parseRepoHosts('relative/dir')).toThrow(/not a host/);
  });
});

describe('Session spec: other fields that reach a command line', () => {
  it('resumeAgentSession is an id, never an option or a path', () => {
    const resume = (id: string) => Value.Check(SessionSpec, spec({ url: URL }, { resumeAgentSession: id }));
    expect(resume('0b7e6c1a-4d4e-4c36-9a57-000000000000')).toBe(true);
    for (const id of ['--fork-session', '../../etc/passwd', 'a b', '']) expect(resume(id)).toBe(false);
  });

  it('phone is E.164 (the web chat uses one too)', () => {
    expect(Value.Check(SessionSpec, { ...spec({ url: URL }), phone: '+15555550100' })).toBe(true);
    for (const bad of ['whatsapp:+14155550123', '14155550123', '+1 415 555 0123', '--x']) {
      expect(Value.Check(SessionSpec, { ...spec({ url: URL }), phone: bad })).toBe(false);
    }
  });
});
