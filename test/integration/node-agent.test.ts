// The local node agent against the real API server: binding, env and volume mapping, the
// Pod's own ServiceAccount identity, phases and exit codes, deletion with SIGTERM.
import { CoreV1Api, type KubeConfig, type V1Pod, type V1VolumeMount } from '@kubernetes/client-node';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodeAgent, type NodeAgent } from '../../local/node-agent/node-agent.ts';
import { containerIdOf, FIRST_HOST_ID } from '../../local/node-agent/id-ranges.ts';
import { volumeDir } from '../../local/node-agent/pod-process.ts';
import { adminKubeConfig, createNamespace, deleteNamespace } from '../support/cluster.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { PROBE_IMAGE_NAME, stageProbeImage, startProbeNode } from '../support/local-images.ts';

let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let agent: NodeAgent;
const stateDir = mkdtempSync(join(tmpdir(), 'tether-node-'));

const SA_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

function probePod(name: string, env: Record<string, string>): V1Pod {
  return {
    metadata: { name },
    spec: {
      serviceAccountName: 'probe',
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'runner',
          image: PROBE_IMAGE_NAME,
          command: ['node', '/app/test/fixtures/pod-probe.ts'],
          workingDir: '/workspace',
          env: [
            ...Object.entries(env).map(([k, v]) => ({ name: k, value: v })),
            { name: 'OUT_FILE', value: `/workspace/${name}.json` },
            { name: 'HOME', value: '/workspace/home' },
            { name: 'RELAY_TOKEN_FILE', value: '/var/run/secrets/tether/relay/token' },
            { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
            { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            {
              name: 'SECRET_VAL',
              valueFrom: { secretKeyRef: { name: 'runner-secrets', key: 'GITHUB_TOKEN', optional: true } },
            },
          ],
          volumeMounts: [
            { name: 'workspace', mountPath: '/workspace' },
            { name: 'kube-api', mountPath: SA_MOUNT, readOnly: true },
            { name: 'relay-token', mountPath: '/var/run/secrets/tether/relay', readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'workspace', persistentVolumeClaim: { claimName: 'ws-probe' } },
        {
          name: 'kube-api',
          projected: {
            sources: [
              { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
            ],
          },
        },
        {
          name: 'relay-token',
          projected: {
            sources: [{ serviceAccountToken: { path: 'token', audience: 'tether-relay', expirationSeconds: 3600 } }],
          },
        },
      ],
    },
  };
}

async function waitForPod(
  name: string,
  check: (pod: V1Pod | undefined) => boolean,
  timeoutMs = 30_000,
  namespace = ns,
): Promise<V1Pod | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pod = await core.readNamespacedPod({ name, namespace }).catch(() => undefined);
    if (check(pod)) return pod;
    if (Date.now() > deadline)
      throw new Error(`pod ${name}: condition not met; last status ${JSON.stringify(pod?.status)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const readPod = (name: string) => core.readNamespacedPod({ name, namespace: ns });
const workspaceFile = (file: string) => join(stateDir, 'volumes', ns, 'ws-probe', file);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  kc = adminKubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  ns = await createNamespace(kc, 'node');
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'probe' } } });
  agent = await startProbeNode(kc, ns, stateDir);
}, 60_000);
afterAll(async () => {
  await agent?.stop();
  await deleteNamespace(kc, ns);
});

describe('local node agent', () => {
  it(`binds the pod, runs it with its own \
ServiceAccount identity and mapped paths, and reports Succeeded`, async () => {
    await core.createNamespacedPod({ namespace: ns, body: probePod('ok', {}) });
    const pod = await waitForPod('ok', (p) => p?.status?.phase === 'Succeeded');
    expect(pod!.spec!.nodeName).toBe(agent.nodeName);
    expect(pod!.status!.containerStatuses![0]!.state!.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });

    const report = JSON.parse(readFileSync(workspaceFile('ok.json'), 'utf8'));
    expect(report.user).toBe(`system:serviceaccount:${ns}:probe`);
    expect(report.cwd).toBe(join(stateDir, 'volumes', ns, 'ws-probe'));
    expect(report.env).toEqual({
      NS: ns,
      POD: 'ok',
      HOME: join(stateDir, 'volumes', ns, 'ws-probe', 'home'),
      OUT_FILE: workspaceFile('ok.json'),
      SECRET_VAL: null,
      HOST_ONLY: null,
    });
    expect(report.relayToken).toBe(true);
  });

  it('reports Failed with the exit code', async () => {
    await core.createNamespacedPod({ namespace: ns, body: probePod('fails', { EXIT_CODE: '3' }) });
    const pod = await waitForPod('fails', (p) => p?.status?.phase === 'Failed');
    expect(pod!.status!.containerStatuses![0]!.state!.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
  });

  it('passes secret values by reference', async () => {
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'runner-secrets' }, stringData: { GITHUB_TOKEN: 'ghp_local' } },
    });
    await core.createNamespacedPod({ namespace: ns, body: probePod('secret', {}) });
    await waitForPod('secret', (p) => p?.status?.phase === 'Succeeded');
    expect(JSON.parse(readFileSync(workspaceFile('secret.json'), 'utf8')).env.SECRET_VAL).toBe('ghp_local');
  });

  it.runIf(process.getuid?.() === 0)(
    'runs each container as its own user with only the volumes it mounts',
    async () => {
      const probe = (name: string, uid: number, mounts: V1VolumeMount[], env: Record<string, string>) => ({
        name,
        image: PROBE_IMAGE_NAME,
        command: ['node', '/app/test/fixtures/pod-isolation-probe.ts'],
        securityContext: { runAsUser: uid, runAsGroup: uid },
        env: Object.entries({ SHARED_DIR: '/ipc', WORKSPACE: '/workspace', ...env }).map(([k, v]) => ({
          name: k,
          value: v,
        })),
        volumeMounts: [{ name: 'ipc', mountPath: '/ipc' }, { name: 'workspace', mountPath: '/workspace' }, ...mounts],
      });
      const pod: V1Pod = {
        metadata: { name: 'pair' },
        spec: {
          serviceAccountName: 'probe',
          automountServiceAccountToken: false,
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 5,
          securityContext: { fsGroup: 2000 },
          initContainers: [
            {
              ...probe('supervisor', 2001, [{ name: 'creds', mountPath: '/creds' }], {
                ROLE: 'supervisor',
                TOKEN_FILE: '/creds/token',
              }),
              restartPolicy: 'Always',
            },
          ],
          containers: [probe('agent', 2002, [], { ROLE: 'agent', FOREIGN_TOKEN: 'set below' })],
          volumes: [
            { name: 'ipc', emptyDir: {} },
            { name: 'workspace', persistentVolumeClaim: { claimName: 'ws-pair' } },
            {
              name: 'creds',
              projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }] },
            },
          ],
        },
      };
      await core.createNamespacedPod({ namespace: ns, body: pod });
      const done = await waitForPod('pair', (p) => p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed');
      expect(done!.status!.phase).toBe('Succeeded');
      // The sidecar runs until its Pod's regular containers have finished; then the node stops it (SIGTERM: 143).
      expect(done!.status!.initContainerStatuses![0]).toMatchObject({
        name: 'supervisor',
        state: { terminated: { exitCode: 143 } },
      });
      expect(done!.status!.containerStatuses![0]).toMatchObject({
        name: 'agent',
        state: { terminated: { exitCode: 0 } },
      });
      const shared = volumeDir(
        { stateDir },
        done!,
        done!.spec!.volumes!.find((v) => v.name === 'ipc')!,
      );
      const supervisor = JSON.parse(readFileSync(join(shared, 'supervisor.json'), 'utf8'));
      const agentSaw = JSON.parse(readFileSync(join(shared, 'agent.json'), 'utf8'));
      // Container ids run as host ids of the Pod's own range (its claim's): base + id, for users and groups alike.
      const base = supervisor.uid - 2001;
      expect(base).toBeGreaterThanOrEqual(FIRST_HOST_ID);
      expect(containerIdOf(supervisor.uid)).toBe(2001);
      expect(supervisor).toMatchObject({ uid: base + 2001, gid: base + 2001, token: 'ok' });
      expect(supervisor.groups).toContain(base + 2000);
      expect(agentSaw.groups).not.toContain(base + 2001);
      expect(agentSaw).toMatchObject({
        uid: base + 2002,
        gid: base + 2002,
        token: 'EACCES',
        environ: 'EACCES',
        signal: 'EPERM',
        workspace: 'ok',
      });
      const workspace = join(stateDir, 'volumes', ns, 'ws-pair');
      expect(readFileSync(join(workspace, 'agent-wrote.txt'), 'utf8')).toBe('hi');
      // The claim is the Pod's fsGroup's alone; the folders on the way may be passed, not listed.
      expect(statSync(workspace)).toMatchObject({ uid: base, gid: base + 2000 });
      expect(statSync(workspace).mode & 0o7777).toBe(0o2770);
      // an emptyDir both mount: the Pod's alone too
      expect(statSync(shared)).toMatchObject({ uid: base, gid: base + 2000 });
      expect(statSync(shared).mode & 0o7777).toBe(0o2770);
      for (const dir of [stateDir, join(stateDir, 'pods'), join(stateDir, 'volumes'), join(stateDir, 'volumes', ns)])
        expect(statSync(dir).mode & 0o777).toBe(0o711);
      const podFolder = join(
        stateDir,
        'pods',
        readdirSync(join(stateDir, 'pods')).find((d) => d.includes('_pair_'))!,
      );
      for (const log of ['supervisor.log', 'agent.log'])
        expect(statSync(join(podFolder, log))).toMatchObject({ uid: 0, mode: 0o100600 });
    },
  );

  it.runIf(process.getuid?.() === 0)(
    'gives a claim the same ids in every Pod that mounts it, and another claim others',
    async () => {
      const writer = (name: string, claim: string): V1Pod => ({
        metadata: { name },
        spec: {
          automountServiceAccountToken: false,
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 5,
          securityContext: { runAsUser: 1001, runAsGroup: 1000, fsGroup: 1000 },
          containers: [
            {
              name: 'agent',
              image: PROBE_IMAGE_NAME,
              command: ['node', '-e', "require('fs').writeFileSync(process.env.OUT, String(process.getuid()))"],
              env: [{ name: 'OUT', value: `/workspace/${name}` }],
              volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }],
            },
          ],
          volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: claim } }],
        },
      });
      for (const [name, claim] of [
        ['first', 'ws-same'],
        ['again', 'ws-same'],
        ['other', 'ws-other'],
      ] as const) {
        await core.createNamespacedPod({ namespace: ns, body: writer(name, claim) });
        await waitForPod(name, (p) => p?.status?.phase === 'Succeeded');
      }
      const uidIn = (claim: string, file: string) =>
        Number(readFileSync(join(stateDir, 'volumes', ns, claim, file), 'utf8'));
      expect(uidIn('ws-same', 'again')).toBe(uidIn('ws-same', 'first'));
      expect(containerIdOf(uidIn('ws-other', 'other'))).toBe(1001);
      expect(uidIn('ws-other', 'other')).not.toBe(uidIn('ws-same', 'first'));
    },
  );

  it(`mounts a Secret volume once the Secret exists, and rewrites its file in place when the Secret \
changes`, async () => {
    const READER =
      "const fs = require('fs'); let last = ''; setInterval(() => { let t; " +
      "try { t = fs.readFileSync(process.env.TOKEN, 'utf8'); } catch (e) { t = 'ERR ' + e.code; } " +
      "if (t !== last) { last = t; fs.appendFileSync(process.env.OUT, t + '\\n'); } " +
      "if (t === 'done') process.exit(0); }, 20)";
    const secretPod: V1Pod = {
      metadata: { name: 'secret-vol' },
      spec: {
        automountServiceAccountToken: false,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 5,
        securityContext: { runAsUser: 1001, runAsGroup: 1000, fsGroup: 1000 },
        containers: [
          {
            name: 'runner',
            image: PROBE_IMAGE_NAME,
            command: ['node', '-e', READER],
            env: [
              { name: 'OUT', value: '/workspace/secret-vol.log' },
              { name: 'TOKEN', value: '/var/run/secrets/tether/github/token' },
            ],
            volumeMounts: [
              { name: 'workspace', mountPath: '/workspace' },
              { name: 'github-token', mountPath: '/var/run/secrets/tether/github', readOnly: true },
            ],
          },
        ],
        volumes: [
          { name: 'workspace', persistentVolumeClaim: { claimName: 'ws-secret' } },
          { name: 'github-token', secret: { secretName: 'secret-vol-github', defaultMode: 0o440 } },
        ],
      },
    };
    await core.createNamespacedPod({ namespace: ns, body: secretPod });
    await waitForPod('secret-vol', (p) => Boolean(p?.spec?.nodeName));
    await new Promise((r) => setTimeout(r, 500));
    expect((await core.readNamespacedPod({ name: 'secret-vol', namespace: ns })).status?.phase).not.toBe('Running');

    const secret = (token: string) => ({
      metadata: { name: 'secret-vol-github' },
      data: { token: Buffer.from(token).toString('base64') },
    });
    await core.createNamespacedSecret({ namespace: ns, body: secret('first') });
    await waitForPod('secret-vol', (p) => p?.status?.phase === 'Running');
    const log = join(stateDir, 'volumes', ns, 'ws-secret', 'secret-vol.log');
    const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []);
    const until = async (line: string) => {
      const deadline = Date.now() + 15_000;
      while (!lines().includes(line) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    };
    await until('first');
    const file = join(volumeDir({ stateDir }, await readPod('secret-vol'), secretPod.spec!.volumes![1]!), 'token');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(containerIdOf(statSync(file).uid)).toBe(1001);

    await core.replaceNamespacedSecret({ name: 'secret-vol-github', namespace: ns, body: secret('second') });
    await until('second');
    await core.replaceNamespacedSecret({ name: 'secret-vol-github', namespace: ns, body: secret('done') });
    await waitForPod('secret-vol', (p) => p?.status?.phase === 'Succeeded');
    expect(lines()).toEqual(['first', 'second', 'done']);
  });

  it('stops the whole process group with SIGTERM when the pod is deleted, then removes the pod', async () => {
    await core.createNamespacedPod({ namespace: ns, body: probePod('waits', { MODE: 'wait' }) });
    await waitForPod('waits', (p) => p?.status?.phase === 'Running');
    const deadline = Date.now() + 15_000;
    while (!existsSync(workspaceFile('waits.json')) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const { child } = JSON.parse(readFileSync(workspaceFile('waits.json'), 'utf8')) as { child: number };
    expect(alive(child)).toBe(true);

    await core.deleteNamespacedPod({ name: 'waits', namespace: ns });
    await waitForPod('waits', (p) => p === undefined);
    expect(readFileSync(workspaceFile('waits.json.terminated'), 'utf8')).toBe('yes');
    const gone = Date.now() + 5000;
    while (alive(child) && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
    expect(alive(child)).toBe(false);
  });
});

/**
 * A node agent of its own (through a proxy the test can close) running `names` as waiting pods in a fresh namespace;
 * the agent gets no answer to the status reports of the pods named in `unanswered` (the API server takes them).
 */
async function agentRunning(names: string[], unanswered: string[] = []) {
  const namespace = await createNamespace(kc, 'nodestop');
  const proxy = await startFaultProxy(kc);
  if (unanswered.length)
    proxy.holdAnswers(new RegExp(`^PATCH /api/v1/namespaces/${namespace}/pods/(${unanswered.join('|')})/status`));
  const lines: Array<{ level: number; msg: string; pods?: string[]; containers?: Array<{ pid: number }> }> = [];
  const cluster = kc.getCurrentCluster()!;
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'probe' } } });
  const agent = await startNodeAgent({
    kubeConfig: proxy.kubeConfig,
    logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    images: { [PROBE_IMAGE_NAME]: await stageProbeImage(stateDir) },
    stateDir,
    server: cluster.server,
    caFile: cluster.caFile!,
    nodeName: `node-${namespace}`,
    namespace,
    env: {},
  });
  for (const name of names) await core.createNamespacedPod({ namespace, body: probePod(name, { MODE: 'wait' }) });
  for (const name of names) await waitForPod(name, (p) => p?.status?.phase === 'Running', 30_000, namespace);
  const cleanup = async () => {
    await proxy.close().catch(() => undefined);
    await deleteNamespace(kc, namespace);
  };
  return { namespace, proxy, agent, lines, cleanup };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

describe('local node agent, stopping', () => {
  it('stop() returns once the exits of the pods it stopped are reported', async () => {
    const { namespace, agent, lines, cleanup } = await agentRunning(['one', 'two']);
    try {
      await agent.stop();
      for (const name of ['one', 'two'])
        expect(['Succeeded', 'Failed']).toContain((await core.readNamespacedPod({ name, namespace })).status?.phase);
      expect(lines.filter((l) => l.level >= 40)).toEqual([]);
    } finally {
      await cleanup();
    }
  });

  it('the exits an unreachable API server cannot take are one info line, not an error per pod', async () => {
    // The second pod's Running report is taken by the API server, but the agent still waits for the answer at stop.
    const { namespace, proxy, agent, lines, cleanup } = await agentRunning(['first', 'second'], ['second']);
    try {
      await proxy.close(); // the API server is gone, as when the control plane stops first
      await agent.stop();
      const pids = lines.flatMap((l) => l.containers?.map((c) => c.pid) ?? []);
      expect(pids).toHaveLength(2);
      expect(pids.filter(isAlive)).toEqual([]);
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
      const unreported = lines.filter((l) => /not reported/.test(l.msg));
      expect(unreported.map((l) => ({ level: l.level, pods: l.pods?.sort() }))).toEqual([
        { level: 30, pods: [`${namespace}/first`, `${namespace}/second`] },
      ]);
    } finally {
      await cleanup();
    }
  });
});
