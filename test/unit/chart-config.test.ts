// The chart and the code agree: the environment the chart gives the controller and the relay is
// exactly what their config.ts reads and accepts (the CRD: chart-crd.test.ts).
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { desiredPod } from '../../controller/builders.ts';
import { loadConfig as loadControllerConfig, VARIABLE_NAMES } from '../../controller/config.ts';
import { DEFAULT_POLICY, parsePolicy } from '../../runner-image/policy.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';
import { RELAY_ENV, loadConfig as loadRelayConfig } from '../../relay/config.ts';
import { LIMITS } from '../../common/session/schema.ts';
import { BRANCH_PATTERN, REPO_HOST_PATTERN, REPO_URL_PATTERN, repoProblem } from '../../common/session/repo.ts';
import { MAX_QUEUED_CEILING, SESSION_DEFAULTS } from '../../common/session/defaults.ts';
import {
  CHART_DIR,
  HELM_SETUP_TIMEOUT,
  everythingOn,
  find,
  helmBin,
  podTemplate,
  render,
  renderError,
  type KubeObject,
  type PodTemplate,
} from './chart-render.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const CONTROLLER_VARIABLES = new Set<string>(VARIABLE_NAMES);
/** Set by the chart, waiting for the controller to read it (see the chart docs). */
const PENDING_IN_CONTROLLER = new Set<string>([]);

const data = (o: KubeObject) => (o as unknown as { data: Record<string, string> }).data;

/** The environment a container gets: its ConfigMap, literal values, and Secret keys (as placeholders). */
function containerEnv(
  objects: KubeObject[],
  template: PodTemplate,
  secrets: Record<string, string> = {},
): Record<string, string> {
  const container = template.spec.containers[0]!;
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? [])
    Object.assign(env, data(find(objects, 'ConfigMap', source.configMapRef!.name)));
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef)
      env[e.name] = secrets[e.name] ?? `secret:${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`;
    else env[e.name] = 'from-the-downward-api';
  }
  return env;
}

describe.each([
  ['default values', {}],
  ['every optional part on', everythingOn],
])('controller environment, %s', (_, values) => {
  let env: Record<string, string>;
  beforeAll(async () => {
    const objects = await render(values, { release: 'tether', namespace: 'agents' });
    env = containerEnv(objects, podTemplate(find(objects, 'Deployment', 'controller')));
  });

  it('names only variables controller/config.ts reads', () => {
    expect(CONTROLLER_VARIABLES.size).toBeGreaterThan(10);
    const unknown = Object.keys(env).filter(
      (name) => !CONTROLLER_VARIABLES.has(name) && !PENDING_IN_CONTROLLER.has(name),
    );
    expect(unknown).toEqual([]);
  });

  it('lists as pending only variables the controller still does not read', () => {
    for (const name of PENDING_IN_CONTROLLER)
      expect(CONTROLLER_VARIABLES.has(name), `${name} is read now: remove it from PENDING_IN_CONTROLLER`).toBe(false);
  });

  it("is accepted by the controller's loadConfig", () => {
    const config = loadControllerConfig({ ...env, POD_NAME: 'tether-controller-0' });
    expect(config.namespace).toBe('agents');
    expect(config.leaseName).toBe('tether-controller');
    expect(config.leaderElection).toBe(true);
    expect(config.relayUrl).toMatch(/^http:\/\/tether-relay\.agents\.svc:\d+$/);
    expect(config.runnerSecret).toBe(values === everythingOn ? 'my-runner' : 'tether-runner');
    expect(config.metricsPort).toBe(9090);
  });
});

it('controller config carries non-default values through', async () => {
  const objects = await render(everythingOn, { release: 'tether', namespace: 'agents' });
  const config = loadControllerConfig(containerEnv(objects, podTemplate(find(objects, 'Deployment', 'controller'))));
  expect(config).toMatchObject({
    runnerImage: 'registry.example.com/tether/tether-runner:1.2.3',
    pvc: { size: '20Gi', storageClass: 'fast-ssd' },
    githubApiUrl: 'https://github.example.com/api/v3',
    defaultRunTimeoutMs: 2 * 3_600_000,
    defaultApprovalTimeoutMs: 45 * 60_000,
    maxQueued: 3,
    concurrency: 4,
    historyCount: 50,
    podTtlMs: 3_600_000,
    logLevel: 'debug',
  });
});

it("the install's permission policy reaches every runner Pod, and the runner reads it over its defaults", async () => {
  const objects = await render(everythingOn, { release: 'tether', namespace: 'agents' });
  const config = loadControllerConfig(containerEnv(objects, podTemplate(find(objects, 'Deployment', 'controller'))));
  const pod = desiredPod(testSession(), { ...unitConfig(), permissionPolicy: config.permissionPolicy });
  const env = pod.spec!.containers[0]!.env!.find((e) => e.name === 'TETHER_PERMISSION_POLICY')!.value!;
  expect(parsePolicy(env)).toEqual({
    ...DEFAULT_POLICY,
    deny: ['Bash(git push*)', 'WebFetch'],
    ask: ['Bash(npm install*)'],
  });
  expect(pod.spec!.initContainers!.flatMap((c) => c.env ?? []).map((e) => e.name)).not.toContain(
    'TETHER_PERMISSION_POLICY',
  );
  const key = { TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY };
  expect(() => loadControllerConfig({ ...key, TETHER_RUNNER_PERMISSION_POLICY: '{"deny":"Bash"}' })).toThrow(
    /TETHER_RUNNER_PERMISSION_POLICY\.deny/,
  );
  expect(() => loadControllerConfig({ ...key, TETHER_RUNNER_PERMISSION_POLICY: '{"alow":[]}' })).toThrow(
    /TETHER_RUNNER_PERMISSION_POLICY/,
  );
  expect(await renderError({ runner: { permissionPolicy: { allow: 'Bash' } } })).toMatch(/permissionPolicy/);
});

it("gives the relay and the controller the same Session defaults, which are the code's", async () => {
  const values = parse(readFileSync(`${CHART_DIR}/values.yaml`, 'utf8')) as {
    sessions: { timeouts: unknown; maxQueued: unknown };
  };
  expect({ timeouts: values.sessions.timeouts, maxQueued: values.sessions.maxQueued }).toEqual(SESSION_DEFAULTS);
  const schema = JSON.parse(readFileSync(`${CHART_DIR}/values.schema.json`, 'utf8')) as {
    properties: { sessions: { properties: { maxQueued: { maximum: number } } } };
  };
  expect(schema.properties.sessions.properties.maxQueued.maximum).toBe(MAX_QUEUED_CEILING);
  const objects = await render({ sessions: { maxQueued: 7, timeouts: { run: '3h', approval: '20m' } } });
  const sessionVariables = ['TETHER_MAX_QUEUED', 'TETHER_RUN_TIMEOUT', 'TETHER_APPROVAL_TIMEOUT'];
  for (const component of ['relay', 'controller']) {
    const env = data(find(objects, 'ConfigMap', component));
    expect(
      sessionVariables.map((name) => env[name]),
      component,
    ).toEqual(['7', '3h', '20m']);
  }
});

it('gives the relay and the controller one daily budget and time zone', async () => {
  const objects = await render(
    { relay: { dailyBudgetUsd: '3.5', budgetTimeZone: 'Asia/Tokyo' } },
    { release: 'tether', namespace: 'agents' },
  );
  const relay = loadRelayConfig(
    containerEnv(objects, podTemplate(find(objects, 'Deployment', 'relay')), {
      RELAY_MEDIA_SIGNING_KEY: 'k'.repeat(48),
      RELAY_WEB_CHAT_TOKEN: 't'.repeat(24),
    }),
  );
  const controller = loadControllerConfig(
    containerEnv(objects, podTemplate(find(objects, 'Deployment', 'controller'))),
  );
  expect(controller.budget).toEqual({ dailyUsd: relay.cost.dailyUsd, timeZone: relay.cost.timeZone });
  expect(controller.budget).toEqual({ dailyUsd: 3.5, timeZone: 'Asia/Tokyo' });
});

describe("the Session's repository", () => {
  it("the controller allows relay.repo.url's host and controller.repositoryHosts, and refuses any other", async () => {
    const controllerConfig = async (values: object) => {
      const objects = await render(values, { release: 'tether', namespace: 'agents' });
      return loadControllerConfig(containerEnv(objects, podTemplate(find(objects, 'Deployment', 'controller'))));
    };
    expect((await controllerConfig({})).repoHosts).toEqual(['github.com']);
    const config = await controllerConfig({
      relay: { repo: { url: 'https://git.example.com:8443/team/app.git' } },
      controller: { repositoryHosts: ['ghe.example', 'git.example.com:8443'] },
    });
    expect(config.repoHosts).toEqual(['git.example.com:8443', 'ghe.example']);
    expect(repoProblem({ url: 'https://git.example.com:8443/team/other.git' }, config.repoHosts)).toBeUndefined();
    expect(repoProblem({ url: 'https://github.com/acme/web.git' }, config.repoHosts)).toMatch(
      /not on this install's list/,
    );
  });

  it(`relay.repositories: the relay lists them after relay.repo, the controller allows their hosts, the relay may keep \
each phone's choice`, async () => {
    const values = {
      relay: {
        repo: { url: 'https://github.com/acme/web.git', name: 'web' },
        repositories: [
          { name: 'api', url: 'https://git.example.com:8443/acme/api.git', baseBranch: 'dev' },
          { name: 'docs', url: 'https://github.com/acme/docs.git' },
        ],
      },
    };
    const objects = await render(values, { release: 'tether', namespace: 'agents' });
    const relay = loadRelayConfig(
      containerEnv(objects, podTemplate(find(objects, 'Deployment', 'relay')), {
        RELAY_MEDIA_SIGNING_KEY: 'k'.repeat(48),
        RELAY_WEB_CHAT_TOKEN: 't'.repeat(24),
      }),
    );
    expect(relay.repos.map((r) => `${r.name} ${r.url} ${r.baseBranch}`)).toEqual([
      'web https://github.com/acme/web.git main',
      'api https://git.example.com:8443/acme/api.git dev',
      'docs https://github.com/acme/docs.git main',
    ]);
    expect(relay.repoChoicesConfigMap).toBe('tether-relay-repo-choices');
    const controller = loadControllerConfig(
      containerEnv(objects, podTemplate(find(objects, 'Deployment', 'controller'))),
    );
    expect(controller.repoHosts).toEqual(['github.com', 'git.example.com:8443']);
    expect(relay.repoHosts, 'the relay reads the list the controller reads').toEqual(controller.repoHosts);
    const role = objects.find((o) => o.kind === 'Role' && o.metadata.name === 'tether-relay') as unknown as {
      rules: Array<{ resourceNames?: string[] }>;
    };
    expect(role.rules.flatMap((r) => r.resourceNames ?? [])).toEqual([
      'tether-relay-claims',
      'tether-pull-requests',
      'tether-relay-repo-choices',
    ]);
    expect(objects.some((o) => o.kind === 'ConfigMap' && o.metadata.name === 'tether-relay-repo-choices')).toBe(true);
    expect(
      await renderError({ relay: { repositories: [{ name: 'Web App', url: 'https://github.com/a/b.git' }] } }),
    ).toMatch(/repositories\/0\/name/);
  });

  it('relay.inboundImages reaches the relay; the schema holds the picture limit the agent accepts', async () => {
    const objects = await render({ relay: { inboundImages: { maxBytes: 1_000_000, timeout: '20s' } } });
    const relay = loadRelayConfig(
      containerEnv(objects, podTemplate(find(objects, 'Deployment', 'relay')), {
        RELAY_MEDIA_SIGNING_KEY: 'k'.repeat(48),
        RELAY_WEB_CHAT_TOKEN: 't'.repeat(24),
      }),
    );
    expect(relay.inboundImages).toEqual({ maxBytes: 1_000_000, timeoutMs: 20_000 });
    const defaults = await render({});
    expect(
      loadRelayConfig(
        containerEnv(defaults, podTemplate(find(defaults, 'Deployment', 'relay')), {
          RELAY_MEDIA_SIGNING_KEY: 'k'.repeat(48),
          RELAY_WEB_CHAT_TOKEN: 't'.repeat(24),
        }),
      ).inboundImages,
    ).toEqual({ maxBytes: LIMITS.imageBytes, timeoutMs: 30_000 });
    expect(await renderError({ relay: { inboundImages: { maxBytes: LIMITS.imageBytes + 1 } } })).toMatch(
      /inboundImages\/maxBytes/,
    );
    expect(await renderError({ relay: { inboundImages: { timeout: 'soon' } } })).toMatch(/inboundImages\/timeout/);
  });

  it("the values schema uses the Session schema's patterns", async () => {
    const schema = JSON.parse(readFileSync(`${CHART_DIR}/values.schema.json`, 'utf8')) as {
      properties: Record<
        string,
        {
          properties: Record<
            string,
            { properties?: Record<string, { pattern?: string }>; items?: { pattern?: string } }
          >;
        }
      >;
    };
    expect(schema.properties.relay!.properties.repo!.properties!.url!.pattern).toBe(REPO_URL_PATTERN);
    expect(schema.properties.relay!.properties.repo!.properties!.baseBranch!.pattern).toBe(BRANCH_PATTERN);
    expect(schema.properties.controller!.properties.repositoryHosts!.items!.pattern).toBe(REPO_HOST_PATTERN);
    expect(
      await renderError({
        relay: { repo: { url: 'https://github.com/acme/web.git', baseBranch: '--upload-pack=touch /tmp/x' } },
      }),
    ).toMatch(/baseBranch/);
    expect(await renderError({ relay: { repo: { url: 'git@github.com:acme/web.git' } } })).toMatch(/relay\/repo\/url/);
    expect(await renderError({ controller: { repositoryHosts: ['https://evil.example'] } })).toMatch(/repositoryHosts/);
  });
});

describe.each([
  ['default values', {}],
  ['every optional part on', everythingOn],
])('relay environment, %s', (_, values) => {
  let env: Record<string, string>;
  beforeAll(async () => {
    const objects = await render(values, { release: 'tether', namespace: 'agents' });
    env = containerEnv(objects, podTemplate(find(objects, 'Deployment', 'relay')), {
      TWILIO_ACCOUNT_SID: `AC${'0'.repeat(32)}`,
      TWILIO_AUTH_TOKEN: 'twilio-token',
      RELAY_MEDIA_SIGNING_KEY: 'k'.repeat(48),
      RELAY_WEB_CHAT_TOKEN: 't'.repeat(24),
    });
  });

  it('names only variables relay/config.ts reads', () => {
    const known = new Set(Object.keys(RELAY_ENV.properties));
    expect(Object.keys(env).filter((name) => !known.has(name))).toEqual([]);
  });

  it("is accepted by the relay's loadConfig", () => {
    const config = loadRelayConfig(env);
    expect(config.namespace).toBe('agents');
    expect(config.media.dir).toBe('/var/lib/tether/media');
    if (values === everythingOn) {
      expect(config.webhookUrl).toBe('https://wa.example.org/tether/webhook');
      expect([...config.allowedNumbers]).toEqual(['+14155550123', '+447700900123']);
      expect(config.twilio).toMatchObject({ from: 'whatsapp:+14155238886', templateSid: `HX${'a'.repeat(32)}` });
      expect(config.repo).toEqual({ url: 'https://github.com/acme/web.git', baseBranch: 'develop' });
      expect(config.timeouts).toEqual({ run: '2h', approval: '45m' });
      expect(config.webChat?.phone).toBe('+15555550100');
      expect(config.inboundConcurrency).toBe(32);
      expect(config.maxQueued).toBe(3);
    } else {
      expect(config.maxQueued).toBe(SESSION_DEFAULTS.maxQueued);
      expect(config.timeouts).toEqual(SESSION_DEFAULTS.timeouts);
      // Without Twilio credentials the chart switches the web chat on: the relay needs a transport.
      expect(config.twilio).toBeUndefined();
      expect(config.webChat).toEqual({ token: 't'.repeat(24), phone: '+15555550100' });
    }
  });

  it('listens on the port the Deployment and Service use', () => {
    expect(env.RELAY_PORT).toBe('8080');
  });
});

it(`runner.keepAlive reaches the controller: 10m by default, 0 turns the live runner off, a malformed \
one is refused`, async () => {
  const keepAlive = async (values: object) => {
    const objects = await render(values, { release: 'tether', namespace: 'agents' });
    return loadControllerConfig(containerEnv(objects, podTemplate(find(objects, 'Deployment', 'controller'))))
      .keepAliveMs;
  };
  expect(await keepAlive({})).toBe(600_000);
  expect(await keepAlive({ runner: { keepAlive: '0' } })).toBe(0);
  expect(await keepAlive({ runner: { keepAlive: '1h30m' } })).toBe(5_400_000);
  await expect(render({ runner: { keepAlive: '10 minutes' } })).rejects.toThrow(/keepAlive/);
  const key = { TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY };
  expect(() => loadControllerConfig({ ...key, TETHER_RUNNER_KEEP_ALIVE: '-1m' })).toThrow(/TETHER_RUNNER_KEEP_ALIVE/);
});
