// Runner configuration.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeRedactor } from '../../common/log.ts';
import { githubToken } from '../../runner-image/git/token.ts';
import { parseConfig, SCRIPTED_MODEL_KEY, loopbackModelEnv } from '../../runner-image/config.ts';

const base = { TETHER_SESSION_NAME: 'abc-20261122083000-k3x9', TETHER_SESSION_NAMESPACE: 'tether' };
const egressTokenFile = join(mkdtempSync(join(tmpdir(), 'egress-secret-')), 'token');
writeFileSync(egressTokenFile, 'egress-token-0123456789');

describe('runner config', () => {
  it('applies defaults and runs Claude Code against the scripted model without an API key', () => {
    const c = parseConfig(base);
    expect(c).toMatchObject({
      workspace: '/workspace',
      repoDir: '/workspace/repo',
      home: '/workspace/home',
      gitStore: '/var/lib/tether/git',
      mediaDir: '/var/lib/tether/git/media',
      scriptedModel: true,
      model: 'claude-sonnet-4-5',
      github: { apiUrl: 'https://api.github.com' },
      repoHosts: ['github.com'],
    });
    expect(c.relay).toBeUndefined();
    expect(c.claudePath).toBeUndefined();
    expect(c.agentEnv).toEqual({
      PATH: expect.any(String),
      HOME: '/workspace/home',
      CLAUDE_CONFIG_DIR: '/workspace/home/.claude',
      LANG: 'C.UTF-8',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    });
    expect(loopbackModelEnv(c.agentEnv, 'http://127.0.0.1:4100')).toMatchObject({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:4100',
      ANTHROPIC_API_KEY: SCRIPTED_MODEL_KEY,
    });
  });

  it('with a key Claude Code talks to the API; GITHUB_TOKEN never reaches it; proxies do', () => {
    const c = parseConfig({
      ...base,
      ANTHROPIC_API_KEY: 'sk-ant-xyz123',
      GITHUB_TOKEN: 'ghp_abc',
      TETHER_RELAY_URL: 'http://relay:8080/',
      HTTPS_PROXY: 'http://proxy:3128',
      NO_PROXY: '.svc',
    });
    expect(c.scriptedModel).toBe(false);
    expect(c.agentEnv).toMatchObject({
      ANTHROPIC_API_KEY: 'sk-ant-xyz123',
      HTTPS_PROXY: 'http://proxy:3128',
      NO_PROXY: '.svc,127.0.0.1,localhost',
    });
    expect(c.agentEnv).not.toHaveProperty('ANTHROPIC_BASE_URL');
    expect(Object.values(c.agentEnv)).not.toContain('ghp_abc');
    expect(c.relay).toEqual({ url: 'http://relay:8080', tokenFile: '/var/run/secrets/tether/relay/token' });
    expect(c.secrets).toEqual(['ghp_abc', 'sk-ant-xyz123']);
  });

  it("with egress Claude Code's base environment carries no proxy of the operator's (its own comes per \
Session)", () => {
    const c = parseConfig({
      ...base,
      TETHER_POD_NAME: 'p-runner',
      TETHER_EGRESS_URL: 'http://egress:3128',
      TETHER_EGRESS_TOKEN_FILE: egressTokenFile,
      HTTPS_PROXY: 'http://proxy:3128',
      HTTP_PROXY: 'http://proxy:3128',
      NO_PROXY: '.svc',
    });
    expect(Object.keys(c.agentEnv).filter((name) => /proxy/i.test(name))).toEqual([]);
    expect(JSON.stringify(c.agentEnv)).not.toContain('egress-token-0123456789');
  });

  it('takes the repository host list from the controller and refuses a malformed one', () => {
    expect(parseConfig({ ...base, TETHER_REPO_HOSTS: 'ghe.example,/srv/git' }).repoHosts).toEqual([
      'ghe.example',
      '/srv/git',
    ]);
    expect(() => parseConfig({ ...base, TETHER_REPO_HOSTS: 'ssh://ghe.example' })).toThrow(
      /^TETHER_REPO_HOSTS: "ssh:\/\/ghe.example" is not a host/,
    );
  });

  it('ANTHROPIC_BASE_URL without a key: another Messages API, given a placeholder key', () => {
    const c = parseConfig({
      ...base,
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:4100',
      TETHER_CLAUDE_MODEL: 'claude-opus-4-1',
    });
    expect(c).toMatchObject({ scriptedModel: false, model: 'claude-opus-4-1' });
    expect(c.agentEnv).toMatchObject({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:4100',
      ANTHROPIC_API_KEY: SCRIPTED_MODEL_KEY,
    });
    expect(c.secrets).toEqual([]);
  });

  it('TETHER_AGENT_SOCKET: Claude Code runs in the agent container; model calls go to the configured API', () => {
    expect(parseConfig(base)).toMatchObject({ agentSocket: undefined, anthropicBaseUrl: 'https://api.anthropic.com' });
    const c = parseConfig({
      ...base,
      TETHER_AGENT_SOCKET: '/run/tether/supervisor/agent.sock',
      ANTHROPIC_API_KEY: 'sk-ant-xyz123',
      ANTHROPIC_BASE_URL: 'https://gateway.example/anthropic/',
    });
    expect(c).toMatchObject({
      agentSocket: '/run/tether/supervisor/agent.sock',
      anthropicBaseUrl: 'https://gateway.example/anthropic',
      scriptedModel: false,
    });
    expect(loopbackModelEnv(c.agentEnv, 'http://127.0.0.1:4100')).toMatchObject({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:4100',
      ANTHROPIC_API_KEY: SCRIPTED_MODEL_KEY,
    });
    expect(() => parseConfig({ ...base, TETHER_AGENT_SOCKET: 'agent.sock' })).toThrow(/TETHER_AGENT_SOCKET/);
  });

  it.each([
    [{ TETHER_SESSION_NAME: undefined }, 'TETHER_SESSION_NAME'],
    [{ TETHER_SESSION_NAMESPACE: 'Bad_NS' }, 'TETHER_SESSION_NAMESPACE'],
    [{ TETHER_WORKSPACE: 'relative/path' }, 'TETHER_WORKSPACE'],
    [{ TETHER_RELAY_URL: 'ftp://x' }, 'TETHER_RELAY_URL'],
    [{ GITHUB_API_URL: 'not a url' }, 'GITHUB_API_URL'],
    [{ ANTHROPIC_BASE_URL: 'localhost:4100' }, 'ANTHROPIC_BASE_URL'],
    [{ TETHER_CLAUDE_MODEL: 'two words' }, 'TETHER_CLAUDE_MODEL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ TETHER_LOG_LEVEL: 'loud' }, 'TETHER_LOG_LEVEL'],
    [{ TETHER_GIT_AUTHOR: 'nobody' }, 'TETHER_GIT_AUTHOR'],
    [{ TETHER_GIT_STORE: 'git' }, 'TETHER_GIT_STORE'],
    [{ TETHER_GIT_STORE: '/workspace/home/git' }, 'TETHER_GIT_STORE'],
    [{ TETHER_GIT_STORE: '/workspace' }, 'TETHER_GIT_STORE'],
    [{ TETHER_AGENT_HOME: '/home/runner' }, 'TETHER_AGENT_HOME'],
    [{ TETHER_AGENT_HOME: '/workspace/../home' }, 'TETHER_AGENT_HOME'],
  ])('refuses %j naming %s', (change, variable) => {
    expect(() => parseConfig({ ...base, ...change })).toThrow(new RegExp(`^${variable}: `));
  });

  it('never echoes a secret in a config error', () => {
    expect(() => parseConfig({ ...base, TETHER_SESSION_NAME: undefined, GITHUB_TOKEN: 'ghp_zzz' })).toThrow(
      /^(?!.*ghp_zzz)/,
    );
  });

  it('reads TETHER_LOG_LEVEL; the old LOG_LEVEL still works, reported once naming the new', () => {
    const reported: string[] = [];
    const onRenamed = (old: string, current: string) => reported.push(`${old} → ${current}`);
    expect(parseConfig({ ...base, TETHER_LOG_LEVEL: 'warn' }, onRenamed).logLevel).toBe('warn');
    expect(parseConfig({ ...base, LOG_LEVEL: 'debug' }, onRenamed).logLevel).toBe('debug');
    expect(reported).toEqual(['LOG_LEVEL → TETHER_LOG_LEVEL']);
  });

  it('reads GITHUB_TOKEN_FILE at each use, over GITHUB_TOKEN; the redactor learns every token it read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'token-file-'));
    try {
      const file = join(dir, 'token');
      const c = parseConfig({ ...base, GITHUB_TOKEN: 'ghp_fixed0000', GITHUB_TOKEN_FILE: file });
      expect(c.github).toEqual({ apiUrl: 'https://api.github.com', tokenFile: file });
      const redact = makeRedactor(c.secrets);
      const token = githubToken(c.github, redact.learn);
      expect(() => token()).toThrow(`cannot read the GitHub token file ${file}: ENOENT`);
      writeFileSync(file, '\n');
      expect(() => token()).toThrow(`the GitHub token file ${file} is empty`);
      writeFileSync(file, 'v1.first0token\n');
      expect(token()).toBe('v1.first0token');
      writeFileSync(file, 'v1.second0token');
      expect(token()).toBe('v1.second0token');
      expect(redact('a v1.first0token b v1.second0token')).toBe('a [redacted] b [redacted]');
      expect(githubToken(parseConfig({ ...base, GITHUB_TOKEN: 'ghp_fixed0000' }).github, redact.learn)()).toBe(
        'ghp_fixed0000',
      );
      expect(() => parseConfig({ ...base, GITHUB_TOKEN_FILE: 'relative/token' })).toThrow(/^GITHUB_TOKEN_FILE: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
