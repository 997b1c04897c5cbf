// The local node agent's network isolation (root, as CI runs): the `agent` container's processes run
// in a network namespace of their Pod's own with loopback only; the egress proxy's port and the
// supervisor's model port are carried in through Unix sockets; the runner container stays on the
// host's network; the namespace, the forwards and the sockets go with the Pod (and with a dead node agent).
import { CoreV1Api, type KubeConfig, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeAgent } from '../../local/node-agent/node-agent.ts';
import { FIRST_HOST_ID } from '../../local/node-agent/id-ranges.ts';
import { SOCKET_ROOT } from '../../local/node-agent/pod-network.ts';
import { volumeDir } from '../../local/node-agent/pod-process.ts';
import { eventually } from '../support/eventually.ts';
import { adminKubeConfig, createNamespace, deleteNamespace } from '../support/cluster.ts';
import { PROBE_IMAGE_NAME, startProbeNode } from '../support/local-images.ts';

const asRoot = process.getuid?.() === 0;
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let agent: NodeAgent;
const stateDir = mkdtempSync(join(tmpdir(), 'tether-netns-'));
const servers: Server[] = [];
let hostPort: number;
let egressPort: number;
/** A namespace and a socket folder as a node agent that died (its pid is gone) left them. */
let leftName: string;
let leftFolder: string;

/** A listener on the host's loopback that greets every connection with `word`. */
async function greeter(word: string): Promise<number> {
  const server = createServer((socket) => socket.end(word));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

const namespaces = () => execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });

function probe(role: 'runner' | 'agent', uid: number): V1Container {
  return {
    name: role,
    image: PROBE_IMAGE_NAME,
    command: ['node', '/app/test/fixtures/node-agent-network-probe.ts'],
    securityContext: { runAsUser: uid, runAsGroup: uid },
    env: Object.entries({ ROLE: role, SHARED_DIR: '/ipc', HOST_PORT: hostPort, EGRESS_PORT: egressPort }).map(
      ([name, value]) => ({ name, value: String(value) }),
    ),
    volumeMounts: [{ name: 'ipc', mountPath: '/ipc' }],
  };
}

/** As a runner Pod: the agent a sidecar, the runner the regular container. */
const runnerLikePod = (name: string, agentCommand?: string[]): V1Pod => ({
  metadata: { name },
  spec: {
    automountServiceAccountToken: false,
    restartPolicy: 'Never',
    terminationGracePeriodSeconds: 5,
    securityContext: { fsGroup: 1000 },
    initContainers: [
      { ...probe('agent', 1001), restartPolicy: 'Always', ...(agentCommand ? { command: agentCommand } : {}) },
    ],
    containers: [probe('runner', 1000)],
    volumes: [{ name: 'ipc', emptyDir: {} }],
  },
});

async function waitForPod(name: string, check: (pod: V1Pod | undefined) => boolean): Promise<V1Pod | undefined> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const pod = await core.readNamespacedPod({ name, namespace: ns }).catch(() => undefined);
    if (check(pod)) return pod;
    if (Date.now() > deadline) throw new Error(`pod ${name}: condition not met; last ${JSON.stringify(pod?.status)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const keyOf = (pod: V1Pod) => `${process.pid}-${pod.metadata!.uid!.slice(0, 8)}`;

beforeAll(async () => {
  if (!asRoot) return;
  [hostPort, egressPort] = [await greeter('host'), await greeter('egress')];
  const dead = spawnSync('true').pid;
  leftName = `tether-${dead}-deadbeef`;
  leftFolder = join(SOCKET_ROOT, `${dead}-deadbeef`);
  execFileSync('ip', ['netns', 'add', leftName]);
  mkdirSync(leftFolder, { recursive: true });
  kc = adminKubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  ns = await createNamespace(kc, 'netns');
  agent = await startProbeNode(kc, ns, stateDir, { containers: ['agent'], ports: [egressPort] });
}, 90_000);
afterAll(async () => {
  await agent?.stop();
  if (ns) await deleteNamespace(kc, ns);
  for (const server of servers) server.close();
});

describe.runIf(asRoot)('local node agent: the agent container network', () => {
  it('removes the namespaces and socket folders a node agent that is gone left behind', () => {
    expect(namespaces()).not.toContain(leftName);
    expect(existsSync(leftFolder)).toBe(false);
  });

  it(`runs the agent container with loopback only: the host's listeners refuse it, the egress and model ports \
are carried in, the runner container reaches the host, a reset still works; all of it gone with the Pod`, async () => {
    await core.createNamespacedPod({ namespace: ns, body: runnerLikePod('probe') });
    const running = await waitForPod('probe', (p) => p?.status?.phase === 'Running');
    const key = keyOf(running!);
    expect(namespaces()).toContain(`tether-${key}`);
    const done = await waitForPod('probe', (p) => p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed');
    expect(done!.status!.phase).toBe('Succeeded');

    const shared = volumeDir({ stateDir }, done!, done!.spec!.volumes![0]!);
    const runner = JSON.parse(readFileSync(join(shared, 'runner.json'), 'utf8'));
    const agentSaw = JSON.parse(readFileSync(join(shared, 'agent.json'), 'utf8'));
    expect(runner.host).toBe('host');
    expect(agentSaw).toEqual({
      host: 'ECONNREFUSED',
      egress: 'egress',
      model: 'model',
      interfaces: ['lo'],
      reset: { straggler: 'killed', egressAfter: 'egress' },
    });
    expect(namespaces()).not.toContain(`tether-${key}`);
    expect(existsSync(join(SOCKET_ROOT, key))).toBe(false);
  });

  it("stops a Pod's processes in its namespace when the Pod is deleted, and removes the namespace", async () => {
    await core.createNamespacedPod({
      namespace: ns,
      body: runnerLikePod('stopped', ['node', '-e', 'setInterval(() => undefined, 1000)']),
    });
    const running = await waitForPod('stopped', (p) => p?.status?.phase === 'Running');
    const key = keyOf(running!);
    const agentPid = agent.processOf(`${ns}/stopped`, 'agent')!.child.pid!;
    // Root enters the namespaces and covers the host's socket folders first, then drops to the Pod's user.
    // (A range's ids have 9 or 10 digits: FIRST_HOST_ID and up.)
    const uid = () => Number(/^Uid:\s+(\d+)\s/m.exec(readFileSync(`/proc/${agentPid}/status`, 'utf8'))?.[1]);
    await eventually(() => expect(uid()).toBeGreaterThanOrEqual(FIRST_HOST_ID));
    for (const kind of ['net', 'mnt'])
      expect(execFileSync('readlink', [`/proc/${agentPid}/ns/${kind}`], { encoding: 'utf8' })).not.toBe(
        execFileSync('readlink', [`/proc/self/ns/${kind}`], { encoding: 'utf8' }),
      );
    await core.deleteNamespacedPod({ name: 'stopped', namespace: ns });
    await waitForPod('stopped', (p) => p === undefined);
    expect(existsSync(`/proc/${agentPid}`)).toBe(false);
    await eventually(() => {
      expect(namespaces()).not.toContain(`tether-${key}`);
      expect(existsSync(join(SOCKET_ROOT, key))).toBe(false);
    }, 10_000);
  });
});
