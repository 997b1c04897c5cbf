// kubelet against the local control plane: a client certificate for system:node:<name>
// (Node authorizer + NodeRestriction on the API server), cgroupfs, serving and healthz on
// 127.0.0.1 only, no static Pods, and the kernel tunables kubelet sets put back on stop.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, kubeconfigYaml } from '../control-plane/control-plane.ts';
import { clientCert, signedCert, type Pki } from '../control-plane/pki.ts';
import { startManaged, type Managed } from '../control-plane/processes.ts';
import { createCgroupRoot, removeCgroupRoot } from './cgroups.ts';

export interface Kubelet {
  nodeName: string;
  healthzPort: number;
  process: Managed;
  /** Where kubelet writes container logs (<namespace>_<pod>_<uid>/<container>/<n>.log). */
  podLogsDir: string;
  /** kubelet's own log. */
  logFile: string;
  stop(): Promise<void>;
}

export interface KubeletOptions {
  dir: string;
  binDir: string;
  server: string;
  pki: Pki;
  nodeName: string;
  runtimeEndpoint: string;
}

/** What kubelet writes at start (unless protectKernelDefaults, which refuses to start instead). */
const KERNEL_TUNABLES = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
];

async function readTunables(): Promise<Map<string, string>> {
  const values = await Promise.all(KERNEL_TUNABLES.map((name) => readFile(`/proc/sys/${name}`, 'utf8')));
  return new Map(KERNEL_TUNABLES.map((name, i) => [name, values[i]!.trim()]));
}

async function restoreTunables(saved: Map<string, string>): Promise<void> {
  for (const [name, value] of saved) await writeFile(`/proc/sys/${name}`, value);
}

interface Layout {
  ports: { serving: number; healthz: number };
  podLogsDir: string;
  cgroupRoot: string;
}

function kubeletConfiguration(o: KubeletOptions, { ports, podLogsDir, cgroupRoot }: Layout): string {
  const config = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: '127.0.0.1',
    port: ports.serving,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: ports.healthz,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: o.pki.caCert } },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: o.runtimeEndpoint,
    cgroupDriver: 'cgroupfs',
    cgroupRoot,
    failCgroupV1: false,
    failSwapOn: false,
    // kubelet writes the kernel tunables it wants (restored on stop); protectKernelDefaults would refuse to start here.
    protectKernelDefaults: false,
    podLogsDir,
    registerNode: true,
    // Host-network Pods only: no cluster DNS, the host's resolver.
    resolvConf: '/etc/resolv.conf',
    // Pool folders and locally imported images stay: no eviction or image GC on a shared disk.
    evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '0%', 'imagefs.available': '0%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    systemReserved: {},
    enforceNodeAllocatable: ['pods'],
    serializeImagePulls: false,
    nodeStatusReportFrequency: '10s',
    // Nothing may dial the node's address: logs are read from podLogsDir, never through the API server.
    enableDebuggingHandlers: false,
    enableServer: true,
  };
  return JSON.stringify(config, null, 2);
}

export async function startKubelet(o: KubeletOptions): Promise<Kubelet> {
  const pkiDir = join(o.dir, 'pki');
  const rootDir = join(o.dir, 'root');
  const podLogsDir = join(o.dir, 'pod-logs');
  await Promise.all([pkiDir, rootDir, podLogsDir].map((d) => mkdir(d, { recursive: true })));
  const client = await clientCert(pkiDir, 'kubelet-client', `/O=system:nodes/CN=system:node:${o.nodeName}`, o.pki);
  const serving = await signedCert(
    pkiDir,
    'kubelet-serving',
    `/CN=${o.nodeName}`,
    'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
    o.pki,
  );
  const kubeconfig = join(o.dir, 'kubelet.kubeconfig');
  await writeFile(kubeconfig, kubeconfigYaml(o.server, o.pki, { name: `system:node:${o.nodeName}`, ...client }));
  const ports = { serving: await freePort(), healthz: await freePort() };
  const configFile = join(o.dir, 'kubelet-config.json');
  const cgroupRoot = await createCgroupRoot(o.nodeName);
  await writeFile(configFile, kubeletConfiguration(o, { ports, podLogsDir, cgroupRoot }));
  const saved = await readTunables();
  const logFile = join(o.dir, 'kubelet.log');
  const proc = startManaged(
    'kubelet',
    join(o.binDir, 'kubelet'),
    [
      `--config=${configFile}`,
      `--kubeconfig=${kubeconfig}`,
      `--root-dir=${rootDir}`,
      `--cert-dir=${pkiDir}`,
      `--tls-cert-file=${serving.cert}`,
      `--tls-private-key-file=${serving.key}`,
      `--hostname-override=${o.nodeName}`,
      `--node-labels=tether.dev/node-tier=kubelet`,
      '--v=1',
    ],
    logFile,
  );
  const stop = async () => {
    await proc.stop(10_000);
    await restoreTunables(saved);
    await removeCgroupRoot(o.nodeName);
  };
  return { nodeName: o.nodeName, healthzPort: ports.healthz, process: proc, podLogsDir, logFile, stop };
}
