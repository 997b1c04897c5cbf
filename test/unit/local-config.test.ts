// `make dev`'s settings: what reaches the relay of the local stack.
import { afterEach, describe, expect, it } from 'vitest';
import { loadDevConfig } from '../../local/config.ts';

const NAMES = ['TETHER_REPOS', 'TETHER_REPO_NAME', 'ALLOWED_NUMBERS'] as const;
const saved = Object.fromEntries(NAMES.map((n) => [n, process.env[n]]));
afterEach(() => {
  for (const n of NAMES) {
    if (saved[n] === undefined) delete process.env[n];
    else process.env[n] = saved[n];
  }
});

describe('loadDevConfig', () => {
  it('hands the repository list and the default repository\'s name to the relay', () => {
    const repos = '[{"name":"web","url":"https://github.com/acme/web.git"}]';
    Object.assign(process.env, { TETHER_REPOS: repos, TETHER_REPO_NAME: 'sample', ALLOWED_NUMBERS: '+14155550123' });
    expect(loadDevConfig().relayEnv).toMatchObject({ TETHER_REPOS: repos, TETHER_REPO_NAME: 'sample', ALLOWED_NUMBERS: '+14155550123' });
  });

  it('leaves out what is empty', () => {
    Object.assign(process.env, { TETHER_REPOS: '', TETHER_REPO_NAME: '' });
    expect(loadDevConfig().relayEnv).not.toHaveProperty('TETHER_REPOS');
    expect(loadDevConfig().relayEnv).not.toHaveProperty('TETHER_REPO_NAME');
  });
});
