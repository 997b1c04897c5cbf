// The controller's egress settings (controller/egress-settings.ts) and what runner Pods get of them:
// the proxy's URL and the Pod's own egress Secret (the supervisor's password for that Pod's name and
// uid), written right after the Pod and mounted by the runner container only.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { ConfigError, loadConfig } from '../../controller/config.ts';
import { take } from '../../controller/decide.ts';
import { computeStatus } from '../../controller/status.ts';
import { supervisorPassword } from '../../common/egress/credentials.ts';
import { runnerName } from '../../common/session/names.ts';
import { desiredEgressSecret } from '../../controller/runner-egress.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';
import { fakeWorld } from './controller-fake-cluster.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';

const KEY = 'k'.repeat(40);
const URL = 'http://tether-egress.tether.svc:3128';
const egress = { url: URL, key: KEY };
const load = (env: Record<string, string>) => loadConfig({ TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY, ...env });
const refusal = (env: Record<string, string>) => {
  try {
    load(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return { variable: (error as ConfigError).variable, message: (error as Error).message };
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
};

describe('controller config: TETHER_EGRESS_URL and TETHER_EGRESS_KEY', () => {
  it('reads both, or neither', () => {
    const hosts = [{ variable: 'TETHER_EGRESS_URL', host: 'tether-egress.tether.svc', service: 'tether-egress' }];
    expect(load({ TETHER_EGRESS_URL: `${URL}/`, TETHER_EGRESS_KEY: KEY }).egress).toEqual({
      ...egress,
      noDns: { hosts },
    });
    expect(load({}).egress).toBeUndefined();
  });

  it.each([
    [{ TETHER_EGRESS_URL: URL }, 'TETHER_EGRESS_KEY', 'both or neither'],
    [{ TETHER_EGRESS_KEY: KEY }, 'TETHER_EGRESS_URL', 'both or neither'],
    [{ TETHER_EGRESS_URL: URL, TETHER_EGRESS_KEY: 'short-key' }, 'TETHER_EGRESS_KEY', 'at least 32'],
    [{ TETHER_EGRESS_URL: 'http://u:p@egress:3128', TETHER_EGRESS_KEY: KEY }, 'TETHER_EGRESS_URL', 'no credentials'],
    [{ TETHER_EGRESS_URL: 'https://egress:3128', TETHER_EGRESS_KEY: KEY }, 'TETHER_EGRESS_URL', 'http://'],
    [{ TETHER_EGRESS_URL: `${URL}/x`, TETHER_EGRESS_KEY: KEY }, 'TETHER_EGRESS_URL', 'no path'],
    [
      { TETHER_EGRESS_URL: URL, TETHER_EGRESS_KEY: KEY, TETHER_RUNNER_HTTPS_PROXY: 'http://corp:3128' },
      'TETHER_RUNNER_HTTPS_PROXY',
      'egress proxy',
    ],
  ])('refuses %j naming %s', (env, variable, words) => {
    const { variable: named, message } = refusal(env);
    expect(named).toBe(variable);
    expect(message).toContain(words);
  });

  it('makes the controller process refuse to start, naming the variable and not the key', () => {
    const short = 'secret-but-short';
    const out = spawnSync(process.execPath, ['controller/main.ts'], {
      env: {
        ...process.env,
        TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
        TETHER_EGRESS_URL: URL,
        TETHER_EGRESS_KEY: short,
        KUBECONFIG: '/nonexistent',
      },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(out.status).toBe(2);
    expect(out.stderr).toContain('TETHER_EGRESS_KEY: (hidden) is invalid');
    expect(out.stderr).not.toContain(short);
  }, 30_000);

  it('never shows the key in its refusal', () => {
    const short = 'secret-but-short';
    expect(refusal({ TETHER_EGRESS_URL: URL, TETHER_EGRESS_KEY: short }).message).not.toContain(short);
  });
});

const session = testSession({ name: 'abc-20261122083000-k3x9', uid: 'uid-1' });
const runner = (pod: V1Pod) => pod.spec!.containers.find((c) => c.name === 'runner')!;
const agent = (pod: V1Pod) => pod.spec!.initContainers!.find((c) => c.name === 'agent')!;
const POD = 'abc-20261122083000-k3x9-runner';

describe('desiredPod with the egress proxy', () => {
  it("gives the runner container the proxy's URL and its Pod's own egress Secret, read-only; the agent nothing", () => {
    const config = unitConfig({ egress, runnerNamespace: 'tether-runners' });
    const without = desiredPod(session, unitConfig({ runnerNamespace: 'tether-runners' }));
    const pod = desiredPod(session, config);
    const repoHosts = runner(without).env!.findIndex((e) => e.name === 'TETHER_REPO_HOSTS');
    expect(runner(pod).env).toEqual([
      ...runner(without).env!.slice(0, repoHosts + 1),
      { name: 'TETHER_EGRESS_URL', value: URL },
      { name: 'TETHER_EGRESS_TOKEN_FILE', value: '/var/run/secrets/tether/egress/token' },
      ...runner(without).env!.slice(repoHosts + 1),
    ]);
    expect(runner(pod).volumeMounts).toEqual([
      ...runner(without).volumeMounts!,
      { name: 'egress-token', mountPath: '/var/run/secrets/tether/egress', readOnly: true },
    ]);
    expect(pod.spec!.volumes).toEqual([
      { name: 'egress-token', secret: { secretName: `${POD}-egress`, defaultMode: 0o440 } },
      ...without.spec!.volumes!,
    ]);
    expect(agent(pod)).toEqual(agent(without));
    expect(JSON.stringify(pod)).not.toContain(KEY);
  });

  it("names a replacement's Secret after the replacement's own name", () => {
    const pod = desiredPod(session, unitConfig({ egress }), 'ws-other', 1);
    expect(pod.spec!.volumes).toContainEqual({
      name: 'egress-token',
      secret: { secretName: `${POD}-1-egress`, defaultMode: 0o440 },
    });
  });

  it("keeps the runner key for the phone's next Session, and changes it with the egress key", () => {
    const next = testSession({ name: 'abc-20261122090000-zzzz', uid: 'uid-2' });
    const runnerKey = (pod: V1Pod) => pod.metadata!.annotations!['tether.dev/runner-key'];
    const [first, second] = [desiredPod(session, unitConfig({ egress })), desiredPod(next, unitConfig({ egress }))];
    expect(runnerKey(first)).toBe(runnerKey(second));
    const rotated = desiredPod(session, unitConfig({ egress: { url: URL, key: 'r'.repeat(40) } }));
    expect(runnerKey(rotated)).not.toBe(runnerKey(first));
    expect(runnerKey(desiredPod(session, unitConfig()))).not.toBe(runnerKey(first));
  });
});

describe("the Pod's egress Secret", () => {
  const made = (uid: string): V1Pod => ({
    metadata: { name: POD, namespace: 'tether-runners', uid, labels: { 'tether.dev/session': session.metadata.name! } },
  });

  it('holds the password of the Pod (name and uid), owned by the Pod, labelled as a runner-egress Secret', () => {
    expect(desiredEgressSecret(made('pod-uid-1'), KEY)).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: `${POD}-egress`,
        namespace: 'tether-runners',
        labels: {
          'app.kubernetes.io/component': 'runner-egress',
          'app.kubernetes.io/part-of': 'tether',
          'tether.dev/session': session.metadata.name,
        },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: POD, uid: 'pod-uid-1' }],
      },
      type: 'Opaque',
      data: {
        token: Buffer.from(supervisorPassword(KEY, 'tether-runners', POD, 'pod-uid-1')).toString('base64'),
      },
    });
  });

  it('differs for a later Pod of the same name', () => {
    const token = (uid: string) => desiredEgressSecret(made(uid), KEY).data!.token;
    expect(token('pod-uid-1')).not.toBe(token('pod-uid-2'));
  });
});

describe('a reconcile pass with the egress proxy', () => {
  const NOW = new Date('2026-11-27T09:00:00Z');
  const config = unitConfig({ egress, runnerNamespace: 'runners' });
  const secretOf = (world: ReturnType<typeof fakeWorld>, pod: string) =>
    world.cluster.secrets.get(`runners/${pod}-egress`);

  it("writes the new Pod's egress Secret right after the Pod, before the status names it", async () => {
    const world = fakeWorld(config, () => NOW, [testSession({ name: 'a' })]);
    await world.pass('tether/a');
    const pod = world.cluster.pods.get(`runners/${runnerName('a')}`)!;
    expect(world.calls.filter((c) => /^(createPod|putSecret|patchStatus)/.test(c))).toEqual([
      `createPod runners/${runnerName('a')}`,
      `putSecret runners/${runnerName('a')}-egress`,
      'patchStatus tether/a',
    ]);
    const { resourceVersion: _version, ...metadata } = secretOf(world, runnerName('a'))!.metadata!;
    expect({ ...secretOf(world, runnerName('a')), metadata }).toEqual(desiredEgressSecret(pod, KEY));
    world.sync();
    const before = world.calls.length;
    await world.pass('tether/a');
    expect(world.calls.slice(before).filter((c) => c.startsWith('putSecret'))).toEqual([]);
  });

  it('writes it again for a Pod made by a pass that stopped before the status (adopted)', async () => {
    const world = fakeWorld(config, () => NOW, [testSession({ name: 'a' })]);
    const failing = world.ops.putSecret;
    world.ops.putSecret = () => Promise.reject(new Error('the API server went away'));
    await expect(world.pass('tether/a')).rejects.toThrow('went away');
    world.ops.putSecret = failing;
    world.sync();
    await world.pass('tether/a');
    const pod = world.cluster.pods.get(`runners/${runnerName('a')}`)!;
    expect(secretOf(world, runnerName('a'))!.data).toEqual(desiredEgressSecret(pod, KEY).data);
  });
});

describe("the controller's status writes", () => {
  it("never name status.egress (the runner's records): a merge patch of the controller's own fields \
leaves them", () => {
    const egressRecords = [
      {
        host: 'registry.npmjs.org',
        port: 443,
        caller: 'agent' as const,
        allowed: 2,
        refused: 0,
        bytes: 4096,
        lastAt: '2026-11-22T08:02:00Z',
      },
    ];
    const session = testSession({
      name: 'e',
      phase: 'Working',
      status: { podName: 'e-runner', egress: egressRecords },
    });
    const now = new Date('2026-11-22T08:03:12.000Z');
    for (const step of [take(session, { type: 'Cancel' }), take(session, { type: 'RunTimeout' })]) {
      const { patch, status } = computeStatus({ session, now, step, message: 'stopped' });
      expect(patch).toBeDefined();
      expect(Object.keys(patch!)).not.toContain('egress');
      expect(status.egress).toEqual(egressRecords);
    }
  });
});
