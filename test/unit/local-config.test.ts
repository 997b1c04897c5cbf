// `make dev`'s settings: what reaches the relay and the controller of the local stack, held
// against both components' schemas, and the one repository host list both read.
import { afterEach, describe, expect, it } from 'vitest';
import { repoProblem } from '../../common/session/repo.ts';
import { loadConfig as loadControllerConfig, VARIABLE_NAMES as CONTROLLER_VARIABLES } from '../../controller/config.ts';
import { RELAY_ENV, loadConfig as loadRelayConfig } from '../../relay/config.ts';
import { DEV_SETTINGS, loadDevConfig, NOT_LOCAL } from '../../local/config.ts';
import { stackEnv, type StackEnvInput } from '../../local/stack-env.ts';
import { EGRESS_ENV, loadConfig as loadEgressConfig } from '../../egress/config.ts';
import { parseCidrs } from '../../egress/cidrs.ts';
import { egressEnv, LOCAL_BLOCKED_CIDRS } from '../../local/egress.ts';

const RELAY_VARIABLES = Object.keys(RELAY_ENV.properties);
const TOUCHED = [
  ...new Set([
    ...DEV_SETTINGS.relay,
    ...DEV_SETTINGS.controller,
    ...DEV_SETTINGS.egress,
    'TETHER_REPO_HOSTS',
    'RELAY_DAILY_BUDGET_USD',
    'RELAY_BUDGET_TIMEZONE',
    'LOG_LEVEL',
  ]),
];
const saved = Object.fromEntries(TOUCHED.map((n) => [n, process.env[n]]));
afterEach(() => {
  for (const n of TOUCHED) {
    if (saved[n] === undefined) delete process.env[n];
    else process.env[n] = saved[n];
  }
});

const LOCAL_EGRESS = { port: 3999, url: 'http://127.0.0.1:3999', key: 'e'.repeat(64) };

const stackInput = (more: Partial<StackEnvInput> = {}): StackEnvInput => ({
  kubeconfig: '/tmp/kubeconfig',
  namespace: 'tether',
  runnerNamespace: 'tether-runners',
  stateDir: '/tmp/state',
  repoUrl: '/srv/one/acme/sample.git',
  githubApiUrl: 'http://127.0.0.1:9999',
  relayUrl: 'http://127.0.0.1:8080',
  relayPort: 8080,
  chatToken: 'c'.repeat(32),
  mediaSigningKey: 'k'.repeat(64),
  phoneHashKey: 'h'.repeat(64),
  metricsPort: 9091,
  egress: LOCAL_EGRESS,
  github: {
    relayTokenFile: '/tmp/state/relay-github-token',
    webhookSecret: 'w'.repeat(32),
    app: { id: 1, installationId: 1, privateKeyFile: '/tmp/state/github-app-private-key.pem' },
  },
  ...more,
});

describe('loadDevConfig', () => {
  it("hands the repository list and the default repository's name to the relay", () => {
    const repos = '[{"name":"web","url":"https://github.com/acme/web.git"}]';
    Object.assign(process.env, { TETHER_REPOS: repos, TETHER_REPO_NAME: 'sample', ALLOWED_NUMBERS: '+14155550123' });
    expect(loadDevConfig().relayEnv).toMatchObject({
      TETHER_REPOS: repos,
      TETHER_REPO_NAME: 'sample',
      ALLOWED_NUMBERS: '+14155550123',
    });
  });

  it('leaves out what is empty', () => {
    Object.assign(process.env, { TETHER_REPOS: '', TETHER_REPO_NAME: '' });
    expect(loadDevConfig().relayEnv).not.toHaveProperty('TETHER_REPOS');
    expect(loadDevConfig().relayEnv).not.toHaveProperty('TETHER_REPO_NAME');
  });

  it(`passes every relay and controller setting the stack does not decide itself; a new variable in either schema \
fails here until it is`, () => {
    const given: Record<string, string> = {};
    for (const name of [...DEV_SETTINGS.relay, ...DEV_SETTINGS.controller]) given[name] = `value-of-${name}`;
    given.TETHER_REPOS = '[{"name":"widgets","url":"/srv/two/widgets.git"}]';
    given.TETHER_REPO_NAME = 'sample';
    given.TETHER_LOG_LEVEL = 'warn';
    Object.assign(process.env, given);
    const config = loadDevConfig();
    const env = stackEnv(stackInput({ relayEnv: config.relayEnv, controllerEnv: config.controllerEnv }));
    for (const name of RELAY_VARIABLES)
      expect(
        name in env.relay || name in NOT_LOCAL,
        `relay ${name}: passed by make dev, set by the stack, or NOT_LOCAL`,
      ).toBe(true);
    for (const name of CONTROLLER_VARIABLES)
      expect(
        name in env.controller || name in NOT_LOCAL,
        `controller ${name}: passed by make dev, set by the stack, or NOT_LOCAL`,
      ).toBe(true);
    for (const name of DEV_SETTINGS.relay)
      expect([RELAY_VARIABLES.includes(name), env.relay[name]], name).toEqual([true, given[name]]);
    for (const name of DEV_SETTINGS.controller)
      expect([(CONTROLLER_VARIABLES as string[]).includes(name), env.controller[name]], name).toEqual([
        true,
        given[name],
      ]);
    expect(env.relay).toMatchObject({
      TETHER_DAILY_BUDGET_USD: given.TETHER_DAILY_BUDGET_USD,
      TETHER_BUDGET_TIMEZONE: given.TETHER_BUDGET_TIMEZONE,
    });
  });

  it('takes an old name for the one both read, giving both the value and one line naming the old and the new', () => {
    Object.assign(process.env, { RELAY_DAILY_BUDGET_USD: '3', LOG_LEVEL: 'debug' });
    const lines: string[] = [];
    const config = loadDevConfig((old, current) => lines.push(`${old} → ${current}`));
    expect(config.relayEnv).toMatchObject({ TETHER_DAILY_BUDGET_USD: '3', TETHER_LOG_LEVEL: 'debug' });
    expect(config.controllerEnv).toMatchObject({ TETHER_DAILY_BUDGET_USD: '3', TETHER_LOG_LEVEL: 'debug' });
    expect(config.logLevel).toBe('debug');
    expect(lines.sort()).toEqual(['LOG_LEVEL → TETHER_LOG_LEVEL', 'RELAY_DAILY_BUDGET_USD → TETHER_DAILY_BUDGET_USD']);
  });

  it('refuses a TETHER_REPO_HOSTS entry that is no host or folder', () => {
    process.env.TETHER_REPO_HOSTS = 'ssh://ghe.example';
    expect(() => loadDevConfig()).toThrow(/^TETHER_REPO_HOSTS: "ssh:\/\/ghe.example" is not a host/);
  });
});

describe("the local stack's keep-alive", () => {
  it("reaches the controller as TETHER_RUNNER_KEEP_ALIVE; unset, the controller's own default stands", () => {
    expect(stackEnv(stackInput({ keepAlive: '15s' })).controller.TETHER_RUNNER_KEEP_ALIVE).toBe('15s');
    expect(stackEnv(stackInput({ keepAlive: '0' })).controller.TETHER_RUNNER_KEEP_ALIVE).toBe('0');
    expect(stackEnv(stackInput()).controller).not.toHaveProperty('TETHER_RUNNER_KEEP_ALIVE');
    const dev = stackEnv(stackInput({ keepAlive: '15s', controllerEnv: { TETHER_RUNNER_KEEP_ALIVE: '2m' } }));
    expect(dev.controller.TETHER_RUNNER_KEEP_ALIVE, "make dev's own setting wins").toBe('2m');
  });
});

describe("the local stack's repository host list", () => {
  it(`two local repositories: the relay and the controller read one list holding both, and both accept the stack's \
settings`, () => {
    const second = '/srv/two/widgets.git';
    const env = stackEnv(
      stackInput({
        relayEnv: { TETHER_REPOS: JSON.stringify([{ name: 'widgets', url: second }]) },
        repoHosts: ['ghe.example'],
      }),
    );
    const relay = loadRelayConfig(env.relay);
    const controller = loadControllerConfig(env.controller);
    expect(relay.repos.map((r) => r.name)).toEqual(['sample', 'widgets']);
    expect(controller.repoHosts).toEqual(['/srv/one/acme/sample.git', second, 'ghe.example']);
    expect(relay.repoHosts).toEqual(controller.repoHosts);
    for (const repo of relay.repos) expect(repoProblem(repo, controller.repoHosts), repo.name).toBeUndefined();
  });

  it('a list the relay would refuse stops the stack before anything starts, naming TETHER_REPOS', () => {
    expect(() =>
      stackEnv(stackInput({ relayEnv: { TETHER_REPOS: '[{"name":"sample","url":"/srv/x.git"}]' } })),
    ).toThrow(/^TETHER_REPOS: the name "sample" is given twice/);
  });
});

describe("the local stack's GitHub settings", () => {
  it("gives the relay the stand-in's URL, its token file and webhook secret, and the controller the App", () => {
    const env = stackEnv(stackInput());
    expect(env.relay).toMatchObject({
      TETHER_GITHUB_API_URL: 'http://127.0.0.1:9999',
      TETHER_GITHUB_TOKEN_FILE: '/tmp/state/relay-github-token',
      TETHER_GITHUB_WEBHOOK_SECRET: 'w'.repeat(32),
    });
    expect(env.controller).toMatchObject({
      GITHUB_API_URL: 'http://127.0.0.1:9999',
      TETHER_GITHUB_APP_ID: '1',
      TETHER_GITHUB_APP_INSTALLATION_ID: '1',
      TETHER_GITHUB_APP_PRIVATE_KEY_FILE: '/tmp/state/github-app-private-key.pem',
    });
    expect(Object.keys(env.relay).filter((n) => n.startsWith('TETHER_GITHUB_APP'))).toEqual([]);
    const plain = stackEnv(stackInput({ github: {} }));
    expect(Object.keys(plain.relay).filter((n) => n.startsWith('TETHER_GITHUB'))).toEqual(['TETHER_GITHUB_API_URL']);
    expect(Object.keys(plain.controller).filter((n) => n.startsWith('TETHER_GITHUB'))).toEqual([]);
  });
});

describe("the local stack's egress proxy", () => {
  const input = (env: Record<string, string> = {}) => ({
    kubeconfig: '/tmp/kubeconfig',
    namespace: 'tether',
    runnerNamespace: 'tether-runners',
    egress: LOCAL_EGRESS,
    repoHosts: '127.0.0.1:4001,/srv/one/acme/sample.git,127.0.0.1:4002',
    supervisorUrls: ['http://127.0.0.1:4003', 'https://api.anthropic.com'],
    ownPorts: [4010, 4011, 4003],
    env,
  });

  it(`passes every setting of the proxy the stack does not set itself; a new variable of its schema fails here \
until it is`, () => {
    const variables = Object.keys(EGRESS_ENV.properties).filter((name) => !name.startsWith('KUBERNETES_'));
    const env = egressEnv(input());
    for (const name of variables)
      expect(
        (DEV_SETTINGS.egress as readonly string[]).includes(name) || name in env || name in NOT_LOCAL,
        `egress ${name}: passed by make dev, set by the stack, or NOT_LOCAL`,
      ).toBe(true);
    for (const name of DEV_SETTINGS.egress) expect(variables, name).toContain(name);
    Object.assign(process.env, { TETHER_EGRESS_ALLOW: 'pypi.org', TETHER_EGRESS_ASK: 'false' });
    expect(loadDevConfig().egressEnv).toEqual({ TETHER_EGRESS_ALLOW: 'pypi.org', TETHER_EGRESS_ASK: 'false' });
  });

  it(`listens on loopback with the stack's key; the supervisor may reach the forges, the GitHub stand-in \
and the model; \
loopback is not blocked, the rest of the default is; the caller's list wins`, () => {
    const config = loadEgressConfig(egressEnv(input({ TETHER_EGRESS_ALLOW: 'pypi.org,127.0.0.1:4100' })));
    expect(config).toMatchObject({ port: 3999, listen: '127.0.0.1', key: LOCAL_EGRESS.key, namespace: 'tether' });
    expect(config.runnerNamespace).toBe('tether-runners');
    const names = (entries: Array<{ host: string; port?: number }>) =>
      entries.map((e) => (e.port ? `${e.host}:${e.port}` : e.host));
    expect(names(config.rules.supervisorAllow)).toEqual([
      '127.0.0.1:4001',
      '127.0.0.1:4002',
      '127.0.0.1:4003',
      'api.anthropic.com',
    ]);
    expect(names(config.rules.allow)).toEqual(['pypi.org', '127.0.0.1:4100']);
    expect(LOCAL_BLOCKED_CIDRS).not.toContain('127.0.0.0/8');
    const blocked = parseCidrs(LOCAL_BLOCKED_CIDRS.join(','));
    expect(['127.0.0.1', '::1', '::ffff:127.0.0.1'].filter((a) => blocked.has(a))).toEqual([]);
    const others = ['127.0.0.0', '127.0.0.2', '127.0.0.3', '127.0.1.1', '127.1.0.1', '127.128.0.1', '127.255.255.255'];
    expect(others.filter((a) => !blocked.has(a))).toEqual([]);
    expect(blocked.has('::ffff:127.0.0.2')).toBe(true);
    expect(LOCAL_BLOCKED_CIDRS).not.toContain('::1/128');
    expect(LOCAL_BLOCKED_CIDRS).toEqual(expect.arrayContaining(['10.0.0.0/8', '169.254.0.0/16', 'fc00::/7']));
    expect(egressEnv(input()).TETHER_EGRESS_BLOCKED_CIDRS).toBe(LOCAL_BLOCKED_CIDRS.join(','));
  });

  it("denies the stack's own ports and the proxy's under each name of loopback, but none the supervisor needs; the \
caller's deny adds", () => {
    const config = loadEgressConfig(egressEnv(input({ TETHER_EGRESS_DENY: 'evil.example' })));
    const names = config.rules.deny.map((e) => (e.port ? `${e.host}:${e.port}` : e.host));
    for (const port of [3999, 4010, 4011])
      expect(names).toEqual(expect.arrayContaining([`127.0.0.1:${port}`, `::1:${port}`, `localhost:${port}`]));
    expect(names).toContain('evil.example');
    // The GitHub stand-in is on the supervisor's list, which the deny list would override.
    expect(names.filter((name) => name.endsWith(':4003'))).toEqual([]);
  });

  it("gives the controller the proxy's URL and key, which it accepts", () => {
    const env = stackEnv(stackInput());
    expect(env.controller).toMatchObject({ TETHER_EGRESS_URL: LOCAL_EGRESS.url, TETHER_EGRESS_KEY: LOCAL_EGRESS.key });
    expect(() => loadControllerConfig(env.controller)).not.toThrow();
  });
});
