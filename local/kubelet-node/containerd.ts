// A private containerd with its CRI plugin for the kubelet node tier: config from
// `containerd config default`, root/state/socket in the tier's folder, cgroupfs, the locally
// built pause image as the sandbox image, a CNI config with no bridge and no addresses
// (host-network Pods only: any other Pod fails to get an address), and a registry hosts folder
// (`certs.d`) where a plain-HTTP registry on loopback can be named (trustLoopbackRegistry).
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startManaged, type Managed } from '../control-plane/processes.ts';
import { CNI_BIN_DIR, PAUSE_IMAGE } from './settings.ts';

const run = promisify(execFile);

export interface Containerd {
  /** unix:// endpoint for kubelet's --container-runtime-endpoint. */
  endpoint: string;
  socket: string;
  process: Managed;
  /** Loads a `docker save`-format or OCI tar into the CRI namespace (k8s.io). */
  importImage(tar: string): Promise<void>;
  /** containerd's registry hosts folder (CRI `registry.config_path`): `<host:port>/hosts.toml` per registry. */
  registryHostsDir: string;
  stop(): Promise<void>;
}

/** Sets `key = value` on the first line that has `key =` after `section` in the TOML text. */
function setIn(toml: string, section: string, key: string, value: string): string {
  const start = toml.indexOf(`[${section}]`);
  if (start < 0) throw new Error(`containerd config has no [${section}]`);
  const pattern = new RegExp(`^(\\s*${key} = ).*$`, 'm');
  const tail = toml.slice(start);
  if (!pattern.test(tail)) throw new Error(`containerd config has no ${key} under [${section}]`);
  return toml.slice(0, start) + tail.replace(pattern, `$1${value}`);
}

const CRI = 'plugins."io.containerd.grpc.v1.cri"';

async function containerdConfig(dir: string): Promise<string> {
  const { stdout } = await run('containerd', ['config', 'default']);
  const q = (s: string) => JSON.stringify(s);
  const edits: Array<[string, string, string]> = [
    ['grpc', 'address', q(join(dir, 'containerd.sock'))],
    ['ttrpc', 'address', q(join(dir, 'containerd.ttrpc.sock'))],
    [CRI, 'restrict_oom_score_adj', 'true'], // the VM lacks CAP_SYS_RESOURCE
    [CRI, 'sandbox_image', q(PAUSE_IMAGE)],
    [CRI, 'stream_server_port', q('0')],
    [`${CRI}.cni`, 'bin_dir', q(CNI_BIN_DIR)],
    [`${CRI}.cni`, 'conf_dir', q(join(dir, 'cni'))],
    [`${CRI}.containerd.runtimes.runc.options`, 'SystemdCgroup', 'false'],
    [`${CRI}.registry`, 'config_path', q(join(dir, 'certs.d'))],
    ['plugins."io.containerd.internal.v1.opt"', 'path', q(join(dir, 'opt'))],
  ];
  let toml = stdout
    .replace(/^root = .*$/m, `root = ${q(join(dir, 'root'))}`)
    .replace(/^state = .*$/m, `state = ${q(join(dir, 'state'))}`);
  for (const [section, key, value] of edits) toml = setIn(toml, section, key, value);
  return toml;
}

/** Loopback only: CRI reports NetworkReady, no bridge, no address range. */
const CNI_CONFIG = {
  cniVersion: '1.0.0',
  name: 'tether-loopback-only',
  plugins: [{ type: 'loopback' }],
};

async function waitForSocket(socket: string, proc: Managed, logFile: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`containerd exited (${proc.child.exitCode}); see ${logFile}`);
    const ok = await run('ctr', ['--address', socket, 'version']).then(
      () => true,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`containerd not answering after ${timeoutMs} ms; see ${logFile}`);
}

/**
 * Lets the node pull from a plain-HTTP registry at 127.0.0.1:<port> (containerd reads the hosts
 * folder at each pull, so this works on a running containerd).
 */
export async function trustLoopbackRegistry(registryHostsDir: string, hostPort: string): Promise<void> {
  if (!/^127\.0\.0\.1:[0-9]{1,5}$/.test(hostPort)) throw new Error(`not a loopback registry: ${hostPort}`);
  const dir = join(registryHostsDir, hostPort);
  await mkdir(dir, { recursive: true });
  const hosts = `server = "http://${hostPort}"\n\n[host."http://${hostPort}"]\n  capabilities = ["pull", "resolve"]\n`;
  await writeFile(join(dir, 'hosts.toml'), hosts);
}

export async function startContainerd(dir: string, pauseTar: string): Promise<Containerd> {
  await mkdir(join(dir, 'cni'), { recursive: true });
  await mkdir(join(dir, 'certs.d'), { recursive: true });
  await writeFile(join(dir, 'cni', '10-loopback.conflist'), JSON.stringify(CNI_CONFIG, null, 2));
  const configFile = join(dir, 'containerd.toml');
  await writeFile(configFile, await containerdConfig(dir));
  const socket = join(dir, 'containerd.sock');
  const logFile = join(dir, 'containerd.log');
  const proc = startManaged('containerd', 'containerd', ['--config', configFile], logFile);
  const stop = () => proc.stop(10_000);
  const importImage = async (tar: string) => {
    await run('ctr', ['--address', socket, '-n', 'k8s.io', 'images', 'import', tar], { maxBuffer: 1 << 24 });
  };
  try {
    await waitForSocket(socket, proc, logFile);
    await importImage(pauseTar);
  } catch (error) {
    await stop();
    throw error;
  }
  const registryHostsDir = join(dir, 'certs.d');
  return { endpoint: `unix://${socket}`, socket, process: proc, importImage, registryHostsDir, stop };
}
