// Attack (local stack, root): the agent container's network namespace has loopback only, but its
// processes share the host's filesystem, so a Unix socket of the host that anyone may open is still
// theirs to use. On a usual Linux host those include the system D-Bus (/run/dbus/system_bus_socket,
// 0666: systemd-resolved's ResolveHostname sends any name to the network's DNS — a channel out) and
// systemd-resolved's varlink socket. Stood in for here by a host listener on a socket of mode 0666 in
// a folder anyone may enter: the agent must not reach it.
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeAgent } from '../../local/node-agent/node-agent.ts';
import { volumeDir } from '../../local/node-agent/pod-process.ts';
import { adminKubeConfig, createNamespace, deleteNamespace } from '../support/cluster.ts';
import { PROBE_IMAGE_NAME, startProbeNode } from '../support/local-images.ts';

const asRoot = process.getuid?.() === 0;
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let agent: NodeAgent;
let service: Server;
const stateDir = mkdtempSync(join(tmpdir(), 'tether-attack-unix-'));
const hostDir = join(tmpdir(), `tether-attack-unix-host-${process.pid}`);
const socketPath = join(hostDir, 'resolver.sock');

/** The agent's probe: what the host's socket answers, or the error code; written to the shared folder. */
const AGENT_PROBE = `
const net = require('node:net'); const fs = require('node:fs'); const path = require('node:path');
const out = (what) =>
  fs.writeFileSync(path.join(process.env.SHARED_DIR, 'agent.json'), JSON.stringify({ unix: what }));
const s = net.connect(process.env.HOST_SOCKET);
s.once('data', (d) => { out(String(d)); s.destroy(); });
s.once('error', (e) => out(e.code || e.message));
setInterval(() => undefined, 1000);
`;

const pod = (name: string): V1Pod => ({
  metadata: { name },
  spec: {
    automountServiceAccountToken: false,
    restartPolicy: 'Never',
    terminationGracePeriodSeconds: 5,
    securityContext: { fsGroup: 1000 },
    initContainers: [
      {
        name: 'agent',
        image: PROBE_IMAGE_NAME,
        restartPolicy: 'Always',
        command: ['node', '-e', AGENT_PROBE],
        securityContext: { runAsUser: 1001, runAsGroup: 1001 },
        env: [
          { name: 'SHARED_DIR', value: '/ipc' },
          { name: 'HOST_SOCKET', value: socketPath },
        ],
        volumeMounts: [{ name: 'ipc', mountPath: '/ipc' }],
      },
    ],
    containers: [
      {
        name: 'runner',
        image: PROBE_IMAGE_NAME,
        command: ['node', '-e', 'setTimeout(() => undefined, 15000)'],
        securityContext: { runAsUser: 1000, runAsGroup: 1000 },
        volumeMounts: [{ name: 'ipc', mountPath: '/ipc' }],
      },
    ],
    volumes: [{ name: 'ipc', emptyDir: {} }],
  },
});

beforeAll(async () => {
  if (!asRoot) return;
  mkdirSync(hostDir, { mode: 0o755 });
  chmodSync(hostDir, 0o755);
  service = createServer((socket) => socket.end('host service'));
  await new Promise<void>((resolve) => service.listen(socketPath, resolve));
  chmodSync(socketPath, 0o666);
  kc = adminKubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  ns = await createNamespace(kc, 'attack-unix');
  agent = await startProbeNode(kc, ns, stateDir, { containers: ['agent'] });
}, 90_000);
afterAll(async () => {
  await agent?.stop();
  if (ns) await deleteNamespace(kc, ns);
  service?.close();
  rmSync(hostDir, { recursive: true, force: true });
});

describe.runIf(asRoot)('the agent container of the local stack', () => {
  it("cannot use a host service's Unix socket that anyone may open (the network's DNS through D-Bus)", async () => {
    await core.createNamespacedPod({ namespace: ns, body: pod('unix') });
    let seen: { unix: string } | undefined;
    const deadline = Date.now() + 60_000;
    while (!seen && Date.now() < deadline) {
      const current = await core.readNamespacedPod({ name: 'unix', namespace: ns }).catch(() => undefined);
      if (current?.status?.phase === 'Running' || current?.status?.phase === 'Succeeded') {
        try {
          seen = JSON.parse(
            readFileSync(join(volumeDir({ stateDir }, current, current.spec!.volumes![0]!), 'agent.json'), 'utf8'),
          );
        } catch {
          // not written yet
        }
      }
      if (!seen) await new Promise((r) => setTimeout(r, 200));
    }
    expect(seen).toBeDefined();
    expect(seen!.unix).not.toBe('host service');
  });
});
