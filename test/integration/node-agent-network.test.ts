// The local node agent's network isolation (root, as CI runs): a runner Pod's containers share one
// network namespace of their Pod's own with loopback only, into which the API server's, the relay's
// and the egress proxy's ports are carried through Unix sockets; without the egress proxy only the
// `agent` container is in it (the supervisor's model port carried in) and the runner container stays
// on the host's network; the namespace, the forwards and the sockets go with the Pod (and with a dead
// node agent).
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
let relayPort: number;
let apiPort: number;
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

function probe(role: 'runner' | 'agent', uid: number, extra: Record<string, string> = {}): V1Container {
  const ports = { HOST_PORT: hostPort, EGRESS_PORT: egressPort, RELAY_PORT: relayPort, API_PORT: apiPort };
  return {
    name: role,
    image: PROBE_IMAGE_NAME,
    command: ['node', '/app/test/fixtures/node-agent-network-probe.ts'],
    securityContext: { runAsUser: uid, runAsGroup: uid },
    env: Object.entries({ ROLE: role, SHARED_DIR: '/ipc', ...ports, ...extra }).map(([name, value]) => ({
      name,
      value: String(value),
    })),
    volumeMounts: [{ name: 'ipc', mountPath: '/ipc' }],
  };
}

/** The runner container's env of a Pod that goes out through the egress proxy (the relay named as localhost). */
const throughProxy = () => ({
  TETHER_EGRESS_URL: `http://127.0.0.1:${egressPort}`,
  TETHER_RELAY_URL: `http://localhost:${relayPort}`,
});

/** As a runner Pod: the agent a sidecar, the runner the regular container (with `runnerEnv`). */
const runnerLikePod = (name: string, runnerEnv: Record<string, string>, agentCommand?: string[]): V1Pod => ({
  metadata: { name },
  spec: {
    automountServiceAccountToken: false,
    restartPolicy: 'Never',
    terminationGracePeriodSeconds: 5,
    securityContext: { fsGroup: 1000 },
    initContainers: [
      { ...probe('agent', 1001), restartPolicy: 'Always', ...(agentCommand ? { command: agentCommand } : {}) },
    ],
    containers: [probe('runner', 1000, runnerEnv)],
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
  [hostPort, egressPort, relayPort] = [await greeter('host'), await greeter('egress'), await greeter('relay')];
  const dead = spawnSync('true').pid;
  leftName = `tether-${dead}-deadbeef`;
  leftFolder = join(SOCKET_ROOT, `${dead}-deadbeef`);
  execFileSync('ip', ['netns', 'add', leftName]);
  mkdirSync(leftFolder, { recursive: true });
  kc = adminKubeConfig();
  apiPort = Number(new URL(kc.getCurrentCluster()!.server).port);
  core = kc.makeApiClient(CoreV1Api);
  ns = await createNamespace(kc, 'netns');
  agent = await startProbeNode(kc, ns, stateDir, { containers: ['agent'] });
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

  /** Runs a probe Pod to its end: what each container saw, and the name of its namespace (gone by then). */
  async function probed(name: string, runnerEnv: Record<string, string>) {
    await core.createNamespacedPod({ namespace: ns, body: runnerLikePod(name, runnerEnv) });
    const running = await waitForPod(name, (p) => p?.status?.phase === 'Running');
    const key = keyOf(running!);
    expect(namespaces()).toContain(`tether-${key}`);
    const done = await waitForPod(name, (p) => p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed');
    expect(done!.status!.phase).toBe('Succeeded');
    const shared = volumeDir({ stateDir }, done!, done!.spec!.volumes![0]!);
    const read = (file: string) => JSON.parse(readFileSync(join(shared, file), 'utf8'));
    return { key, runner: read('runner.json'), agent: read('agent.json') };
  }

  it(`with the egress proxy, runs both containers on one loopback of the Pod's own: the host's listeners refuse \
them, the API server, relay and egress ports are carried in, the runner reaches the agent's server, a reset still \
works; all of it gone with the Pod`, async () => {
    const { key, runner, agent: agentSaw } = await probed('shared', throughProxy());
    expect(runner).toEqual({
      host: 'ECONNREFUSED',
      egress: 'egress',
      relay: 'relay',
      api: 'connected',
      agentLoopback: 'agent',
      interfaces: ['lo'],
    });
    expect(agentSaw).toEqual({
      host: 'ECONNREFUSED',
      egress: 'egress',
      interfaces: ['lo'],
      reset: { straggler: 'killed', egressAfter: 'egress' },
    });
    expect(namespaces()).not.toContain(`tether-${key}`);
    expect(existsSync(join(SOCKET_ROOT, key))).toBe(false);
  });

  it(`without the egress proxy, runs the agent container alone with loopback only (the model port carried in) and \
the runner container on the host's network`, async () => {
    const { key, runner, agent: agentSaw } = await probed('alone', {});
    expect(runner).toMatchObject({ host: 'host', agentLoopback: 'ECONNREFUSED', relay: 'relay' });
    expect(agentSaw).toEqual({
      host: 'ECONNREFUSED',
      egress: 'ECONNREFUSED',
      model: 'model',
      interfaces: ['lo'],
      reset: { straggler: 'killed', egressAfter: 'ECONNREFUSED' },
    });
    expect(namespaces()).not.toContain(`tether-${key}`);
  });

  it('fails a Pod whose relay URL names a host that is not loopback, saying so', async () => {
    const env = { ...throughProxy(), TETHER_RELAY_URL: 'http://relay.example:8080' };
    await core.createNamespacedPod({ namespace: ns, body: runnerLikePod('elsewhere', env) });
    const failed = await waitForPod('elsewhere', (p) => p?.status?.phase === 'Failed');
    expect(failed!.status!.message).toBe(
      'container runner\'s TETHER_RELAY_URL names the host "relay.example", not loopback: the local node carries ' +
        "only ports of the host's loopback into a Pod's network",
    );
  });

  it("stops a Pod's processes in its namespace when the Pod is deleted, and removes the namespace", async () => {
    // (The runner probe waits for an agent that never reports: the Pod runs until it is deleted.)
    await core.createNamespacedPod({
      namespace: ns,
      body: runnerLikePod('stopped', throughProxy(), ['node', '-e', 'setInterval(() => undefined, 1000)']),
    });
    const running = await waitForPod('stopped', (p) => p?.status?.phase === 'Running');
    const key = keyOf(running!);
    const agentPid = agent.processOf(`${ns}/stopped`, 'agent')!.child.pid!;
    // Root enters the namespaces and covers the host's socket folders first, then drops to the Pod's user.
    // (A range's ids have 9 or 10 digits: FIRST_HOST_ID and up.)
    const uid = () => Number(/^Uid:\s+(\d+)\s/m.exec(readFileSync(`/proc/${agentPid}/status`, 'utf8'))?.[1]);
    await eventually(() => expect(uid()).toBeGreaterThanOrEqual(FIRST_HOST_ID));
    const runnerPid = agent.processOf(`${ns}/stopped`, 'runner')!.child.pid!;
    const nsOf = (pid: number | 'self', kind: string) =>
      execFileSync('readlink', [`/proc/${pid}/ns/${kind}`], { encoding: 'utf8' });
    for (const kind of ['net', 'mnt']) expect(nsOf(agentPid, kind)).not.toBe(nsOf('self', kind));
    // One network for the Pod's containers; the supervisor keeps the host's filesystem view.
    await eventually(() => expect(nsOf(runnerPid, 'net')).toBe(nsOf(agentPid, 'net')));
    expect(nsOf(runnerPid, 'mnt')).toBe(nsOf('self', 'mnt'));
    await core.deleteNamespacedPod({ name: 'stopped', namespace: ns });
    await waitForPod('stopped', (p) => p === undefined);
    expect(existsSync(`/proc/${agentPid}`)).toBe(false);
    await eventually(() => {
      expect(namespaces()).not.toContain(`tether-${key}`);
      expect(existsSync(join(SOCKET_ROOT, key))).toBe(false);
    }, 10_000);
  });
});
