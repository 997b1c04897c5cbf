// The real controller and relay, configured from the installed chart's ConfigMaps and Secrets and
// authenticated as the chart's ServiceAccounts (tokens from the TokenRequest API), in a namespace
// enforcing Pod Security `restricted`: the chart's RBAC and env are enough for them to work, and
// the `helm test` script passes against the running relay.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeaderElector } from '../../common/kube/leader-election.ts';
import { SessionClient } from '../../common/kube/sessions.ts';
import { runnerIdentityName, runnerName } from '../../common/session/names.ts';
import { loadConfig as loadControllerConfig } from '../../controller/config.ts';
import { adminKubeConfig, deleteNamespace, installSessionCrd, runnerRelayToken } from '../support/cluster.ts';
import { createSession, phaseOf, startController, type RunningController } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { startTestRelay, type TestRelay } from '../support/relay.ts';
import { find, helmBin, render } from '../unit/chart-render.ts';
import {
  deleteClusterScoped,
  helmRelease,
  installedControllerEnv,
  kubectlOk,
  kubectlResult,
  restrictedNamespace,
} from './chart-cluster.ts';
import { TEST_PHONE_HASH_KEY, testPhoneHash } from '../support/phone-hash.ts';

const runNode = promisify(execFile);
let admin: KubeConfig;
let ns: string;
let runners: string;
let controller: RunningController | undefined;
let relay: TestRelay | undefined;

const json = async <T>(args: string[]) => JSON.parse((await kubectlOk([...args, '-o', 'json'])).stdout) as T;

/** A kubeconfig for the API server that authenticates with a fresh token of `serviceAccount`. */
async function kubeConfigAs(serviceAccount: string, audience?: string): Promise<{ kc: KubeConfig; token: string }> {
  const token = (
    await kubectlOk([
      'create',
      'token',
      serviceAccount,
      '-n',
      ns,
      '--duration=1h',
      ...(audience ? ['--audience', audience] : []),
    ])
  ).stdout.trim();
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: serviceAccount, token }],
    contexts: [{ name: 'sa', cluster: cluster.name, user: serviceAccount, namespace: ns }],
    currentContext: 'sa',
  });
  return { kc, token };
}

beforeAll(async () => {
  helmBin();
  admin = adminKubeConfig();
  await installSessionCrd(admin);
  ns = await restrictedNamespace(admin, 'chart-run');
  // The key the test's own Sessions and relay are named by (test/support/phone-hash.ts).
  await helmRelease('install', 'tether', ns, {
    relay: { allowedNumbers: ['+14155550123'] },
    secrets: { relay: { phoneHashKey: TEST_PHONE_HASH_KEY } },
  });
  runners = `${ns}-runners`;
}, 900_000);
afterAll(async () => {
  await relay?.close();
  await controller?.stop();
  await deleteClusterScoped([ns]);
  await Promise.all([deleteNamespace(admin, ns), deleteNamespace(admin, runners)]);
});

describe('the controller as the chart runs it', () => {
  it("wins its Lease with the chart's Lease name and releases it", async () => {
    const env = await installedControllerEnv(ns);
    const config = loadControllerConfig({ ...env, POD_NAME: 'tether-controller-test' });
    const { kc } = await kubeConfigAs('tether-controller');
    const elector = createLeaderElector({
      kubeConfig: connectionFromKubeConfig(kc),
      namespace: config.namespace,
      name: config.leaseName,
      identity: config.identity,
      logger: pino({ level: 'silent' }),
      retryPeriodMs: 100,
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
    });
    elector.start();
    await eventually(() => expect(elector.isLeader).toBe(true), 10_000);
    await elector.stop();
    const lease = await json<{ spec: { holderIdentity?: string } }>(['get', 'lease', 'tether-controller', '-n', ns]);
    expect(lease.spec.holderIdentity ?? '').toBe('');
  });

  it(`turns a Session into a restricted runner Pod in the runner namespace (admitted by the chart's policy) with its \
workspace and the phone's identity, and cancels it`, async () => {
    const env = await installedControllerEnv(ns);
    const config = loadControllerConfig({ ...env, TETHER_METRICS_PORT: '0' });
    const { kc } = await kubeConfigAs('tether-controller');
    controller = await startController(kc, config);
    // The relay's ServiceAccount writes the Session, as the relay does.
    const sessions = new SessionClient(connectionFromKubeConfig((await kubeConfigAs('tether-relay')).kc));
    const name = await createSession(sessions, ns, '+14155550123');
    await eventually(async () => expect(await phaseOf(sessions, ns, name)).toBe('Starting'), 20_000, 100);
    const identity = runnerIdentityName(testPhoneHash('+14155550123'));
    const pod = await json<{ spec: { serviceAccountName: string; securityContext: { runAsNonRoot: boolean } } }>([
      'get',
      'pod',
      runnerName(name),
      '-n',
      runners,
    ]);
    expect(pod.spec.serviceAccountName).toBe(identity);
    expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
    await kubectlOk(['get', 'serviceaccount', identity, '-n', runners]);
    for (const kind of ['role', 'rolebinding']) await kubectlOk(['get', kind, identity, '-n', ns]);
    const session = (await sessions.get(ns, name))!;
    await kubectlOk(['get', 'pvc', session.spec.workspace, '-n', runners]);

    await sessions.patch(ns, name, { spec: { cancel: true } });
    await eventually(async () => expect(await phaseOf(sessions, ns, name)).toBe('Cancelled'), 20_000, 100);
    await eventually(
      async () => expect((await kubectlResult(['get', 'pod', runnerName(name), '-n', runners])).code).not.toBe(0),
      20_000,
      100,
    );
  });
});

describe('the relay as the chart runs it', () => {
  beforeAll(async () => {
    const env = (await json<{ data: Record<string, string> }>(['get', 'configmap', 'tether-relay', '-n', ns])).data;
    const secret = (await json<{ data: Record<string, string> }>(['get', 'secret', 'tether-relay', '-n', ns])).data;
    const secrets = Object.fromEntries(
      Object.entries(secret).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    const { RELAY_MEDIA_DIR: _inTheImage, RELAY_JOURNAL_DIR: _onItsVolume, ...local } = env;
    relay = await startTestRelay({
      kubeConfig: (await kubeConfigAs('tether-relay')).kc,
      namespace: ns,
      env: { ...local, ...secrets },
    });
  }, 60_000);

  it("passes the helm test hook's check", async () => {
    const hook = find(await render({}, { namespace: ns }), 'Pod', 'relay-test') as unknown as {
      spec: { containers: { command: string[]; args: string[] }[] };
    };
    const [command, flag] = hook.spec.containers[0]!.command;
    expect(command).toBe('node');
    const script = hook.spec.containers[0]!.args[0]!;
    const { stdout } = await runNode(process.execPath, [flag!, script], {
      env: { ...process.env, RELAY_URL: relay!.url, ATTEMPTS: '5' },
    });
    expect(stdout).toBe('/healthz → 200\n/readyz → 200\n');

    const down = await runNode(process.execPath, [flag!, script], {
      env: { ...process.env, RELAY_URL: 'http://127.0.0.1:9', ATTEMPTS: '1' },
    }).then(
      () => 0,
      (e: { code: number }) => e.code,
    );
    expect(down).toBe(1);
  });

  it(`records a typed keyword in the chart's claims ConfigMap with only its get/update rights, and a command in one \
Session`, async () => {
    const phone = relay!.webChat!.phone;
    const id = `web-chart-${Date.now()}`;
    expect(
      await relay!.intake.receive({
        id,
        from: phone,
        body: 'approve',
        transport: 'web',
        receivedAt: new Date().toISOString(),
      }),
    ).toBe('recorded');
    expect(
      await relay!.intake.receive({
        id: `${id}-cmd`,
        from: phone,
        body: 'fix the footer',
        transport: 'web',
        receivedAt: new Date().toISOString(),
      }),
    ).toBe('recorded');
    await relay!.intake.idle();
    const claims = JSON.parse(
      (await kubectlOk(['get', 'configmap', 'tether-relay-claims', '-n', ns, '-o', 'json'])).stdout,
    ) as { data?: Record<string, string> };
    expect(Object.keys(claims.data ?? {})).toHaveLength(1);
    expect(
      relay!
        .webChat!.entries()
        .filter((e) => e.from === 'bot')
        .map((e) => e.text),
    ).toEqual([
      'Nothing is waiting for your decision right now. Send a command, or *status*.',
      expect.stringMatching(/^On it/),
    ]);
  });

  it("checks a runner's media upload with a TokenReview (audience tether-relay)", async () => {
    const session = 'upload-check';
    const token = await runnerRelayToken(admin, runners, session);
    const png = Buffer.from(
      '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f0' +
        '1f0005000201ffa1e4b1f40000000049454e44ae426082',
      'hex',
    );
    const put = (bearer: string) =>
      fetch(`${relay!.url}/uploads/${ns}/${session}/shot.png`, {
        method: 'PUT',
        body: png,
        headers: { 'content-type': 'image/png', authorization: `Bearer ${bearer}` },
      });
    const accepted = await put(token);
    expect(accepted.status).toBe(201);
    expect(await accepted.json()).toEqual({ ref: `${ns}/${session}/shot.png` });
    const wrongAudience = await runnerRelayToken(admin, runners, session, undefined, 'not-the-relay');
    expect((await put(wrongAudience)).status).toBe(403);
  });
});
