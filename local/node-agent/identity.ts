// Who a container's process runs as on the local node, and what it may touch. A kubelet gives
// each container its own mount namespace; local processes share one file system, so the same
// boundary is drawn with users and file modes: a volume only one container mounts belongs to that
// container's user (0700), a volume several containers mount is shared (emptyDir 0777, claims
// through the Pod's fsGroup), and every container runs as its securityContext's user.
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface User {
  uid: number;
  gid: number;
  groups: number[];
}

/** Only root can run containers as other users; otherwise every container runs as the agent's own user. */
export const canSwitchUser = (): boolean => process.getuid?.() === 0;

/** The user a container runs as (its own securityContext over the Pod's), or undefined for "as the node agent". */
export function containerUser(pod: V1Pod, container: V1Container, runAsUsers: boolean): User | undefined {
  const podContext = pod.spec?.securityContext ?? {};
  const own = container.securityContext ?? {};
  const uid = own.runAsUser ?? podContext.runAsUser;
  if (uid === undefined || !runAsUsers || !canSwitchUser()) return undefined;
  const gid = own.runAsGroup ?? podContext.runAsGroup ?? uid;
  const groups = [podContext.fsGroup, ...(podContext.supplementalGroups ?? [])].filter((g): g is number => g !== undefined);
  return { uid, gid, groups: [...new Set(groups)] };
}

/** The containers (regular and sidecar) that mount a volume. */
export function mountersOf(pod: V1Pod, volume: V1Volume): V1Container[] {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.filter((c) => (c.volumeMounts ?? []).some((m) => m.name === volume.name));
}

function chownTree(path: string, uid: number, gid: number, mode?: { dir: number; file: number }): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  chownSync(path, uid, gid);
  if (mode) chmodSync(path, stat.isDirectory() ? mode.dir : mode.file);
  if (stat.isDirectory()) for (const entry of readdirSync(path)) chownTree(join(path, entry), uid, gid, mode);
}

/** Gives a claim's folder to the Pod's fsGroup (group-writable, new files inherit the group), as a kubelet does. */
function shareThroughGroup(dir: string, fsGroup: number): void {
  if (statSync(dir).gid === fsGroup) return;
  const walk = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    chownSync(path, stat.uid, fsGroup);
    chmodSync(path, stat.isDirectory() ? (stat.mode & 0o7777) | 0o2070 : (stat.mode & 0o7777) | 0o060);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
  };
  walk(dir);
}

/** Sets who may use a volume's folder on this node (a no-op when the agent cannot switch users). */
export function claimVolume(dir: string, pod: V1Pod, volume: V1Volume, runAsUsers: boolean): void {
  if (!runAsUsers || !canSwitchUser()) return;
  const users = mountersOf(pod, volume).map((c) => containerUser(pod, c, true));
  const only = users.length > 0 && new Set(users.map((u) => u?.uid ?? -1)).size === 1 ? users[0] : undefined;
  const fsGroup = pod.spec?.securityContext?.fsGroup;
  if (volume.persistentVolumeClaim) {
    if (fsGroup !== undefined) shareThroughGroup(dir, fsGroup);
    else if (only) chownTree(dir, only.uid, only.gid);
  } else if (only) {
    chownTree(dir, only.uid, only.gid, { dir: 0o700, file: 0o600 });
  } else if (volume.emptyDir) {
    chmodSync(dir, 0o777);
  } else if (fsGroup !== undefined) {
    chownTree(dir, 0, fsGroup, { dir: 0o750, file: 0o640 });
  }
}

const traversableByOthers = (path: string): boolean => {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === dirname(dir)) return true;
  }
};

/**
 * A path to this Node.js binary that other users can run: the binary itself when its folders are
 * open to all, else a hard link (or copy) under the node's state folder.
 */
export function sharedNodeBinary(stateDir: string): string {
  if (traversableByOthers(process.execPath)) return process.execPath;
  const bin = join(stateDir, 'bin');
  const target = join(bin, 'node');
  mkdirSync(bin, { recursive: true, mode: 0o755 });
  if (!existsSync(target) || statSync(target).size !== statSync(process.execPath).size) {
    try {
      linkSync(process.execPath, `${target}.new`);
    } catch {
      copyFileSync(process.execPath, `${target}.new`);
    }
    spawnSync('mv', ['-f', `${target}.new`, target]);
    chmodSync(target, 0o755);
  }
  return target;
}

/** Folders on the way to the node's state must be passable for the containers' users. */
export function openStatePath(stateDir: string, runAsUsers: boolean): void {
  if (!runAsUsers || !canSwitchUser()) return;
  for (const dir of [stateDir, join(stateDir, 'pods'), join(stateDir, 'volumes')]) {
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, statSync(dir).mode | 0o711);
  }
}
