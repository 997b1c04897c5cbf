import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../runner-image/config.ts';
import { browserEnvironment } from '../../runner-image/pictures/chromium.ts';

describe("Chromium's environment", () => {
  it('is PATH, a private HOME and XDG folders: nothing of the supervisor, nothing on the workspace', () => {
    const config = parseConfig({
      TETHER_SESSION_NAME: 's',
      TETHER_SESSION_NAMESPACE: 'ns',
      GITHUB_TOKEN: 'ghp_canary_token_value',
      ANTHROPIC_API_KEY: 'sk-ant-canary',
      HTTPS_PROXY: 'http://proxy.example:3128',
    });
    const env = browserEnvironment(`${config.gitStore}/home`, config.agentEnv.PATH!);
    const values = Object.values(env).join('\n');
    for (const secret of config.secrets) expect(values).not.toContain(secret);
    expect(values).not.toContain(config.workspace);
    expect(values).not.toContain('proxy.example');
    expect(Object.keys(env).sort()).toEqual([
      'HOME',
      'LANG',
      'PATH',
      'XDG_CACHE_HOME',
      'XDG_CONFIG_DIRS',
      'XDG_CONFIG_HOME',
      'XDG_DATA_DIRS',
      'XDG_DATA_HOME',
    ]);
    for (const name of ['HOME', 'XDG_CACHE_HOME', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME'])
      expect(env[name]!.startsWith(`${config.gitStore}/`)).toBe(true);
  });
});
