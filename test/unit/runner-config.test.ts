// Runner configuration.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../runner-image/config.ts';

const base = { TETHER_SESSION_NAME: 'abc-20261122083000-k3x9', TETHER_SESSION_NAMESPACE: 'tether' };

describe('runner config', () => {
  it('applies defaults and picks the script agent without an API key', () => {
    const c = parseConfig(base);
    expect(c).toMatchObject({ workspace: '/workspace', repoDir: '/workspace/repo', home: '/workspace/home', gitStore: '/var/lib/tether/git', agent: 'script', github: { apiUrl: 'https://api.github.com' } });
    expect(c.relay).toBeUndefined();
    expect(c.agentEnv).not.toHaveProperty('ANTHROPIC_API_KEY');
  });

  it('picks claude with a key and never hands GITHUB_TOKEN to the agent', () => {
    const c = parseConfig({ ...base, ANTHROPIC_API_KEY: 'sk-ant-xyz123', GITHUB_TOKEN: 'ghp_abc', TETHER_RELAY_URL: 'http://relay:8080/' });
    expect(c.agent).toBe('claude');
    expect(c.agentEnv.ANTHROPIC_API_KEY).toBe('sk-ant-xyz123');
    expect(Object.values(c.agentEnv)).not.toContain('ghp_abc');
    expect(c.relay).toEqual({ url: 'http://relay:8080', tokenFile: '/var/run/secrets/tether/relay/token' });
    expect(c.secrets).toEqual(['ghp_abc', 'sk-ant-xyz123']);
  });

  it.each([
    [{ TETHER_SESSION_NAME: undefined }, 'TETHER_SESSION_NAME'],
    [{ TETHER_SESSION_NAMESPACE: 'Bad_NS' }, 'TETHER_SESSION_NAMESPACE'],
    [{ TETHER_WORKSPACE: 'relative/path' }, 'TETHER_WORKSPACE'],
    [{ TETHER_RELAY_URL: 'ftp://x' }, 'TETHER_RELAY_URL'],
    [{ GITHUB_API_URL: 'not a url' }, 'GITHUB_API_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ TETHER_GIT_AUTHOR: 'nobody' }, 'TETHER_GIT_AUTHOR'],
    [{ TETHER_GIT_STORE: 'git' }, 'TETHER_GIT_STORE'],
    [{ TETHER_GIT_STORE: '/workspace/home/git' }, 'TETHER_GIT_STORE'],
    [{ TETHER_GIT_STORE: '/workspace' }, 'TETHER_GIT_STORE'],
  ])('refuses %j naming %s', (change, variable) => {
    expect(() => parseConfig({ ...base, ...change })).toThrow(new RegExp(`^invalid ${variable}`));
  });

  it('never echoes a secret in a config error', () => {
    expect(() => parseConfig({ ...base, TETHER_SESSION_NAME: undefined, GITHUB_TOKEN: 'ghp_zzz' })).toThrow(/^(?!.*ghp_zzz)/);
  });
});
