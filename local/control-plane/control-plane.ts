// A real local control plane: etcd + kube-apiserver (+ kube-controller-manager for
// garbage collection, namespaces and service accounts) on free loopback ports. etcd serves only
// the API servers (etcd.ts); certificates, kubeconfigs, data and logs stay in a folder (0700) of the
// control plane's own user.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { apiServerEtcdFlags, etcdUrl as etcdUrlOf, startEtcd } from './etcd.ts';
import { createPki, type Pki } from './pki.ts';
import { startManaged, type Managed } from './processes.ts';
import { privateDir, writePrivateFile } from '../private-files.ts';
import { supervise, unsupervised, type Supervised } from '../supervise.ts';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));

/** kube-controller-manager's controllers turned off: the node and cloud ones, which a local plane does not need. */
const CONTROLLERS_OFF = [
  'node-ipam-controller',
  'node-lifecycle-controller',
  'cloud-node-lifecycle-controller',
  'service-lb-controller',
  'node-route-controller',
  'taint-eviction-controller',
  'device-taint-eviction-controller',
];

export interface ControlPlane {
  server: string;
  /** etcd's client URL (TLS; it serves only holders of pki.etcdClientCert). */
  etcdUrl: string;
  kubeconfig: string;
  dir: string;
  binDir: string;
  pki: Pki;
  /** Process ids of etcd, kube-apiserver and (if started) kube-controller-manager. */
  pids: number[];
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Folder for certs, data and logs (made 0700: the control plane's user alone); a temporary one when absent. */
  dir?: string;
  /** Run kube-controller-manager too (default true). */
  controllerManager?: boolean;
  /** Keep the processes running (restart with back-off, local/supervise.ts), reporting each restart here. */
  onSupervision?: (line: string) => void;
}

/** Builds (once, cached) or finds the binaries; returns their folder. */
export async function controlPlaneBinaries(): Promise<string> {
  const { stdout } = await run('bash', [join(here, 'build-control-plane.sh')], {
    maxBuffer: 1 << 20,
    timeout: 3_600_000,
  });
  return stdout.trim().split('\n').at(-1)!;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export function kubeconfigYaml(
  server: string,
  pki: Pick<Pki, 'caCert'>,
  user: { name: string; cert?: string; key?: string; token?: string },
): string {
  const auth = user.token
    ? `    token: ${user.token}\n`
    : `    client-certificate: ${user.cert}\n    client-key: ${user.key}\n`;
  return `apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: ${server}
    certificate-authority: ${pki.caCert}
users:
- name: ${user.name}
  user:
${auth}contexts:
- name: local
  context:
    cluster: local
    user: ${user.name}
current-context: local
`;
}

async function waitReady(server: string, pki: Pki, proc: Managed, logFile: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const [ca, cert, key] = await Promise.all([readFile(pki.caCert), readFile(pki.adminCert), readFile(pki.adminKey)]);
  const { Agent, request } = await import('node:https');
  const agent = new Agent({ ca, cert, key });
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) {
      throw new Error(`kube-apiserver exited (${proc.child.exitCode}); see ${logFile}`);
    }
    const ok = await new Promise<boolean>((resolve) => {
      const req = request(`${server}/readyz`, { agent, timeout: 2000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy());
      req.end();
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`kube-apiserver not ready after ${timeoutMs} ms; see ${logFile}`);
}

/** The real kube-controller-manager: garbage collection, namespaces, service accounts, Deployments. */
function startControllerManager(binDir: string, dir: string, kubeconfig: string, pki: Pki): Managed {
  return startManaged(
    'kube-controller-manager',
    join(binDir, 'kube-controller-manager'),
    [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      '--leader-elect=false',
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      `--controllers=*,${CONTROLLERS_OFF.map((c) => `-${c}`).join(',')}`,
      '--v=0',
    ],
    join(dir, 'kube-controller-manager.log'),
  );
}

interface ApiServerSpec {
  dir: string;
  pki: Pki;
  etcdUrl: string;
  port: number;
  /** The service-account issuer: the first server's URL, shared by every server of the plane. */
  issuer: string;
  name: string;
}

function startApiServer(binDir: string, spec: ApiServerSpec): Managed {
  const { dir, pki } = spec;
  return startManaged(
    spec.name,
    join(binDir, 'kube-apiserver'),
    [
      ...apiServerEtcdFlags(spec.etcdUrl, pki),
      `--secure-port=${spec.port}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--cert-dir=${join(dir, `${spec.name}-certs`)}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCert}`,
      // Node: kubelets (system:node:<name>) reach only their own Node and their Pods' objects.
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      `--service-account-issuer=${spec.issuer}`,
      '--service-cluster-ip-range=10.96.0.0/24',
      '--allow-privileged=false',
      '--enable-priority-and-fairness=false',
      '--v=0',
    ],
    join(dir, `${spec.name}.log`),
  );
}

/** What a second API server of a running plane needs, written next to its kubeconfig. */
interface PlaneFacts {
  binDir: string;
  etcdUrl: string;
  server: string;
  pki: Pki;
  /** The loopback ports the plane listens on: etcd's client and peer ports, the API server's. */
  ports: number[];
}
const PLANE_FILE = 'plane.json';

/** The ports of the plane whose admin kubeconfig this is (none when it is no local plane's). */
export function planePorts(kubeconfig: string): number[] {
  const file = join(dirname(kubeconfig), PLANE_FILE);
  return existsSync(file) ? ((JSON.parse(readFileSync(file, 'utf8')) as Partial<PlaneFacts>).ports ?? []) : [];
}

export interface ExtraApiServer {
  server: string;
  kubeconfig: string;
  proc: Managed;
  stop(): Promise<void>;
}

/**
 * Another kube-apiserver on the same etcd, as in an HA control plane (for fault tests that pause
 * one API server while others keep serving). `dir` is the running plane's folder.
 */
export async function startExtraApiServer(dir: string): Promise<ExtraApiServer> {
  const name = 'kube-apiserver-2';
  const facts = JSON.parse(await readFile(join(dir, PLANE_FILE), 'utf8')) as PlaneFacts;
  const port = await freePort();
  const server = `https://127.0.0.1:${port}`;
  const proc = startApiServer(facts.binDir, {
    dir,
    pki: facts.pki,
    etcdUrl: facts.etcdUrl,
    port,
    issuer: facts.server,
    name,
  });
  try {
    await waitReady(server, facts.pki, proc, join(dir, `${name}.log`));
  } catch (error) {
    await proc.stop();
    throw error;
  }
  const kubeconfig = join(dir, `${name}.kubeconfig`);
  await writePrivateFile(
    kubeconfig,
    kubeconfigYaml(server, facts.pki, { name: 'admin', cert: facts.pki.adminCert, key: facts.pki.adminKey }),
  );
  return { server, kubeconfig, proc, stop: () => proc.stop() };
}

export async function startControlPlane(options: StartOptions = {}): Promise<ControlPlane> {
  const binDir = await controlPlaneBinaries();
  const dir = await privateDir(options.dir ?? (await mkdtemp(join(tmpdir(), 'tether-cp-'))));
  const pki = await createPki(join(dir, 'pki'));
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const server = `https://127.0.0.1:${apiPort}`;
  const procs: Supervised[] = [];
  const keep = async (name: string, start: () => Managed) => {
    const kept = options.onSupervision
      ? await supervise(name, async () => start(), options.onSupervision)
      : unsupervised(start());
    procs.push(kept);
    return kept;
  };

  await keep('etcd', () => startEtcd({ binDir, dir, pki, clientPort: etcdPort, peerPort }));

  const apiLog = join(dir, 'kube-apiserver.log');
  const etcdUrl = etcdUrlOf(etcdPort);
  const apiserver = await keep('kube-apiserver', () =>
    startApiServer(binDir, { dir, pki, etcdUrl, port: apiPort, issuer: server, name: 'kube-apiserver' }),
  );

  const stop = async () => {
    for (const p of procs.reverse()) await p.stop();
    if (!options.dir) await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(server, pki, apiserver.current(), apiLog);
  } catch (error) {
    await stop();
    throw error;
  }

  const kubeconfig = join(dir, 'admin.kubeconfig');
  await writePrivateFile(
    kubeconfig,
    kubeconfigYaml(server, pki, { name: 'admin', cert: pki.adminCert, key: pki.adminKey }),
  );
  await writePrivateFile(
    join(dir, PLANE_FILE),
    JSON.stringify({ binDir, etcdUrl, server, pki, ports: [etcdPort, peerPort, apiPort] } satisfies PlaneFacts),
  );

  if (options.controllerManager !== false)
    await keep('kube-controller-manager', () => startControllerManager(binDir, dir, kubeconfig, pki));
  return {
    server,
    etcdUrl,
    kubeconfig,
    dir,
    binDir,
    pki,
    stop,
    get pids() {
      return procs.map((p) => p.current().child.pid!);
    },
  };
}
