import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig as loadWith } from '../../controller/config.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

/** The controller's config from `env` and the one variable it cannot start without. */
const loadConfig = (env: Record<string, string>) => loadWith({ TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY, ...env });

describe('controller config', () => {
  it('has production defaults', () => {
    const c = loadConfig({ POD_NAME: 'tether-controller-0' });
    expect(c).toMatchObject({
      namespace: 'tether',
      runnerSecret: 'tether-runner',
      pvc: { size: '10Gi' },
      terminationGraceSeconds: 30,
      defaultRunTimeoutMs: 3_600_000,
      defaultApprovalTimeoutMs: 1_800_000,
      podTtlMs: 600_000,
      historyCount: 20,
      maxQueued: 5,
      concurrency: 8,
      metricsPort: 9090,
      leaderElection: true,
      leaseName: 'tether-controller',
      identity: 'tether-controller-0',
      stallTimeoutMs: 150_000,
      repoHosts: ['github.com'],
      budget: { dailyUsd: 10, timeZone: 'UTC' },
    });
    expect(c.pvc.storageClass).toBeUndefined();
    expect(c.relayUrl).toBeUndefined();
  });

  it('reads every setting from its variable', () => {
    const c = loadConfig({
      TETHER_NAMESPACE: 'agents',
      TETHER_PVC_STORAGE_CLASS: 'fast-ssd',
      TETHER_RELAY_URL: 'http://relay:8080',
      GITHUB_API_URL: 'https://ghe.example/api/v3',
      TETHER_REPO_HOSTS: 'ghe.example,git.example.com:8443',
      TETHER_POD_TTL: '0s',
      TETHER_HISTORY_MAX_AGE: '24h',
      TETHER_CONCURRENCY: '32',
      TETHER_DAILY_BUDGET_USD: '2.5',
      TETHER_BUDGET_TIMEZONE: 'Europe/Berlin',
    });
    expect(c).toMatchObject({
      namespace: 'agents',
      pvc: { storageClass: 'fast-ssd' },
      relayUrl: 'http://relay:8080',
      githubApiUrl: 'https://ghe.example/api/v3',
      podTtlMs: 0,
      historyMaxAgeMs: 86_400_000,
      concurrency: 32,
      repoHosts: ['ghe.example', 'git.example.com:8443'],
      budget: { dailyUsd: 2.5, timeZone: 'Europe/Berlin' },
    });
  });

  it.each([
    ['TETHER_NAMESPACE', 'Not_A_Name'],
    ['TETHER_PVC_SIZE', 'ten gigs'],
    ['TETHER_RUN_TIMEOUT', '1 hour'],
    ['TETHER_RUN_TIMEOUT', '0s'],
    ['TETHER_CONCURRENCY', '0'],
    ['TETHER_CONCURRENCY', '-3'],
    ['TETHER_METRICS_PORT', '70000'],
    ['TETHER_RELAY_URL', 'relay:8080'],
    ['TETHER_LEADER_ELECTION', 'yes'],
    ['TETHER_RUNNER_SERVICE_ACCOUNT_TOKEN_SECONDS', '60'],
    ['TETHER_REPO_HOSTS', 'https://github.com'],
    ['TETHER_DAILY_BUDGET_USD', '-1'],
    ['TETHER_BUDGET_TIMEZONE', 'Mars/Olympus'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name}`));
  });

  it('makes the controller process refuse to start, naming the variable', () => {
    const out = spawnSync(process.execPath, ['controller/main.ts'], {
      env: {
        ...process.env,
        TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
        TETHER_PVC_SIZE: 'lots',
        KUBECONFIG: '/nonexistent',
      },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(out.status).toBe(2);
    expect(out.stderr).toContain('TETHER_PVC_SIZE: "lots" is invalid');
  }, 30_000);
});
