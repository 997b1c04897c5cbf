// The network of a Pod on the local node (root only), as a cluster gives a Pod a network namespace
// of its own: a namespace with loopback alone, into which a few of the host's loopback ports are
// carried (carried-ports.ts) through Unix sockets in a folder only root may enter:
//   in the namespace <loopback>:<port> → netns-forward.ts → <folder>/<port> → the node agent
//   → the host's <loopback>:<port>
// No veth, no bridge, no address but loopback. Names carry the node agent's pid
// (`tether-<pid>-<pod uid, 8>`), so a later node agent finds what a dead one left behind.
import type { V1Pod } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type pino from 'pino';
import { startManaged, type Managed } from '../control-plane/processes.ts';
import { joinSockets } from './byte-pipe.ts';
import type { CarriedPort } from './carried-ports.ts';
import { alive } from './image-store.ts';

const run = promisify(execFile);

/** Root's folder (0700) of every Pod's sockets: short, as a socket's path must fit in 107 bytes. */
export const SOCKET_ROOT = '/run/tether';
const NAME = /^tether-(\d+)-([0-9a-f]{8})$/;
const FORWARDER = join(import.meta.dirname, 'netns-forward.ts');
const READY_MS = 30_000;

export interface PodNetwork {
  /** The namespace's name (`ip netns list`). */
  name: string;
  /** What the containers' processes enter (`nsenter --net=`). */
  path: string;
  /** Removes the forwards, the sockets and the namespace. */
  close(): Promise<void>;
}

const keyOf = (pod: V1Pod, pid = process.pid) => `${pid}-${pod.metadata!.uid!.slice(0, 8)}`;

function rootFolder(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chownSync(dir, 0, 0);
  chmodSync(dir, 0o700);
}

/** Connections a Pod may hold open through its carried ports at once (each costs the node agent two descriptors). */
export const MAX_CARRIED_CONNECTIONS = 256;

/**
 * The Pod's own source address on the host's loopback (127.x.y.z from its uid, never 127.0.0.1): the relay
 * and the proxy tell Pods apart by address, as in a cluster, where each Pod has its own.
 */
export function podSourceAddress(uid: string): string {
  const [a, b, c] = createHash('sha256').update(uid).digest();
  return `127.${1 + (a! % 254)}.${b}.${1 + (c! % 254)}`;
}

interface HostSide {
  server: Server;
  sockets: Set<Socket>;
}

/**
 * The host's side of one carried port: <folder>/<port> joined to the host's <loopback>:<port>, from the Pod's own
 * source address; beyond the Pod's share of connections (counted over all its ports), a new one is closed at once.
 */
function hostSide(folder: string, { host: address, port }: CarriedPort, source: string, open: Set<Socket>) {
  const sockets = new Set<Socket>();
  const server = createServer((inside) => {
    if (open.size >= MAX_CARRIED_CONNECTIONS) return void inside.destroy();
    open.add(inside);
    const localAddress = address === '127.0.0.1' ? source : undefined;
    const host = createConnection({ host: address, port, ...(localAddress ? { localAddress } : {}) });
    for (const socket of [inside, host]) {
      sockets.add(socket);
      socket.on('close', () => {
        sockets.delete(socket);
        open.delete(socket);
      });
    }
    joinSockets(inside, host);
  });
  return new Promise<HostSide>((resolve, reject) => {
    server.once('error', reject).listen(join(folder, String(port)), () => resolve({ server, sockets }));
  });
}

/** The forwarder in the namespace, once every port listens there. */
async function startForwarder(name: string, path: string, args: string[], logFile: string): Promise<Managed> {
  let ready!: () => void;
  const listening = new Promise<void>((resolve) => (ready = resolve));
  const forwarder = startManaged(name, process.execPath, [FORWARDER, ...args], logFile, {
    netns: path,
    group: true,
    onLine: (line) => line === 'ready' && ready(),
  });
  let timer: NodeJS.Timeout | undefined;
  const failed = Promise.race([
    forwarder.exited.then((code) => `exited (${code ?? forwarder.child.signalCode}); see ${logFile}`),
    new Promise<string>(
      (resolve) => (timer = setTimeout(() => resolve(`did not listen within ${READY_MS} ms`), READY_MS)),
    ),
  ]);
  const outcome = await Promise.race([listening.then(() => undefined), failed]);
  clearTimeout(timer);
  if (outcome === undefined) return forwarder;
  await forwarder.stop(0);
  throw new Error(`the forwarder into ${name} ${outcome}`);
}

/** A network namespace of the Pod's own with loopback only, and `ports` of the host's loopback carried into it. */
export async function openPodNetwork(pod: V1Pod, ports: CarriedPort[], logFile: string): Promise<PodNetwork> {
  const key = keyOf(pod);
  const name = `tether-${key}`;
  const path = `/run/netns/${name}`;
  const folder = join(SOCKET_ROOT, key);
  const hosts: HostSide[] = [];
  const open = new Set<Socket>();
  const source = podSourceAddress(pod.metadata!.uid!);
  let forwarder: Managed | undefined;
  const close = async () => {
    await forwarder?.stop(1000);
    for (const { server, sockets } of hosts) {
      server.close();
      for (const socket of sockets) socket.destroy();
    }
    rmSync(folder, { recursive: true, force: true });
    await run('ip', ['netns', 'del', name]).catch(() => undefined); // gone already: nothing to remove
  };
  try {
    await run('ip', ['netns', 'add', name]);
    await run('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
    rootFolder(SOCKET_ROOT);
    rootFolder(folder);
    for (const carried of ports) hosts.push(await hostSide(folder, carried, source, open));
    const args = ports.map(({ host, port }) => `${host}:${port}=${join(folder, String(port))}`);
    forwarder = await startForwarder(`${name}/forward`, path, args, logFile);
  } catch (error) {
    await close();
    throw error;
  }
  return { name, path, close };
}

/** Whose a name is: a node agent that is gone (not this one) left it behind. */
const leftBehind = (name: string) => {
  const match = NAME.exec(name) ?? NAME.exec(`tether-${name}`);
  const pid = Number(match?.[1]);
  return match !== null && pid !== process.pid && !alive(pid);
};

/** Removes the namespaces and socket folders of node agents that are gone (a killed `make dev`, a crashed test). */
export async function removeLeftNetworks(logger: pino.Logger): Promise<void> {
  const { stdout } = await run('ip', ['netns', 'list']);
  const namespaces = stdout
    .split('\n')
    .map((line) => line.split(' ')[0]!)
    .filter(leftBehind);
  for (const name of namespaces) await run('ip', ['netns', 'del', name]);
  let folders: string[] = [];
  try {
    folders = readdirSync(SOCKET_ROOT).filter(leftBehind);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  for (const folder of folders) rmSync(join(SOCKET_ROOT, folder), { recursive: true, force: true });
  if (namespaces.length || folders.length)
    logger.info({ namespaces, folders }, 'removed the Pod networks a previous node agent left behind');
}
