// Who a container's process runs as on the local node, and what it may touch. A kubelet gives each
// Pod its own mount namespace (and, with user namespaces, its own host ids); local processes share
// one file system and one id space, so the same boundary is drawn with ids and file modes:
// - each Pod's container users and groups run as host ids of the Pod's own range (id-ranges.ts):
//   no two phones share a uid or a group, while the containers of one Pod share what their
//   securityContexts share (the Pod's fsGroup);
// - a volume only one container mounts belongs to that container's user (0700/0600); a claim or
//   emptyDir several containers mount belongs to the Pod's fsGroup (2770); nobody else may enter;
// - the folders on the way (state, pods, volumes) may be passed (0711), not listed.
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { hostId, idRange, rangeKey, rehome, type IdRange } from './id-ranges.ts';

export interface User {
  uid: number;
  gid: number;
  groups: number[];
}

/** Only root can run containers as other users; otherwise every container runs as the agent's own user. */
export const canSwitchUser = (): boolean => process.getuid?.() === 0;

/**
 * The Pod's id range when its containers run as their own users; undefined: everything runs as the node agent's
 * user.
 */
export function podIdRange(stateDir: string, pod: V1Pod, runAsUsers: boolean): IdRange | undefined {
  return runAsUsers && canSwitchUser() ? idRange(stateDir, rangeKey(pod)) : undefined;
}

/**
 * The user a container runs as: its securityContext's over the Pod's (root when neither says), on the Pod's host
 * ids.
 */
export function containerUser(pod: V1Pod, container: V1Container, range: IdRange | undefined): User | undefined {
  if (!range) return undefined;
  const podContext = pod.spec?.securityContext ?? {};
  const own = container.securityContext ?? {};
  const uid = own.runAsUser ?? podContext.runAsUser ?? 0;
  const gid = own.runAsGroup ?? podContext.runAsGroup ?? uid;
  const groups = [podContext.fsGroup, ...(podContext.supplementalGroups ?? [])].filter(
    (g): g is number => g !== undefined,
  );
  return {
    uid: hostId(range, uid),
    gid: hostId(range, gid),
    groups: [...new Set(groups.map((g) => hostId(range, g)))],
  };
}

/** The containers (regular and sidecar) that mount a volume. */
export function mountersOf(pod: V1Pod, volume: V1Volume): V1Container[] {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.filter((c) => (c.volumeMounts ?? []).some((m) => m.name === volume.name));
}

interface Ownership {
  uid: (id: number) => number;
  gid: (id: number) => number;
  mode: (mode: number, isDir: boolean) => number;
}

function applyTree(path: string, own: Ownership): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  chownSync(path, own.uid(stat.uid), own.gid(stat.gid));
  chmodSync(path, own.mode(stat.mode & 0o7777, stat.isDirectory()));
  if (stat.isDirectory()) for (const entry of readdirSync(path)) applyTree(join(path, entry), own);
}

const ownerBits = (mode: number) => mode & 0o700;

/**
 * A folder several containers of the Pod write: the Pod's root owns it, its fsGroup shares it
 * (2770). What is inside comes along when the folder is not so yet (a first use, or a claim from
 * an older node): every entry moves to the Pod's ids, its group may do what its owner may, others nothing.
 */
function shareWithGroup(dir: string, range: IdRange, group: number): void {
  const root = hostId(range, 0);
  const stat = statSync(dir);
  if (stat.uid === root && stat.gid === group && (stat.mode & 0o7777) === 0o2770) return;
  applyTree(dir, {
    uid: (id) => rehome(range, id),
    gid: () => group,
    mode: (mode, isDir) => (isDir ? 0o2000 : 0) | ownerBits(mode) | (ownerBits(mode) >> 3),
  });
  chmodSync(dir, 0o2770);
  chownSync(dir, root, group);
}

/** A folder one container's user alone writes (0700); what is inside moves to the Pod's ids, others get nothing. */
function keepForUser(dir: string, range: IdRange, user: User): void {
  const stat = statSync(dir);
  if (stat.uid === user.uid && stat.gid === user.gid && (stat.mode & 0o7777) === 0o700) return;
  applyTree(dir, { uid: (id) => rehome(range, id), gid: (id) => rehome(range, id), mode: ownerBits });
  chmodSync(dir, 0o700);
  chownSync(dir, user.uid, user.gid);
}

/** Sets who may use a volume's folder on this node (nothing to set when every container runs as the node agent). */
export function claimVolume(dir: string, pod: V1Pod, volume: V1Volume, range: IdRange | undefined): void {
  if (!range) return;
  const users = mountersOf(pod, volume).map((c) => containerUser(pod, c, range)!);
  const only = users.length > 0 && new Set(users.map((u) => u.uid)).size === 1 ? users[0] : undefined;
  const fsGroup = pod.spec?.securityContext?.fsGroup;
  const group = fsGroup === undefined ? undefined : hostId(range, fsGroup);
  const written = !volume.persistentVolumeClaim && !volume.emptyDir; // projected: files the node agent wrote
  if (users.length === 0) {
    applyTree(dir, { uid: () => 0, gid: () => 0, mode: (_m, isDir) => (isDir ? 0o700 : 0o600) });
  } else if (volume.persistentVolumeClaim && group !== undefined && !only) {
    shareWithGroup(dir, range, group);
  } else if (only && written) {
    applyTree(dir, { uid: () => only.uid, gid: () => only.gid, mode: (_m, isDir) => (isDir ? 0o700 : 0o600) });
  } else if (only) {
    keepForUser(dir, range, only);
  } else if (group !== undefined && written) {
    applyTree(dir, { uid: () => 0, gid: () => group, mode: (_m, isDir) => (isDir ? 0o750 : 0o640) });
  } else if (group !== undefined) {
    shareWithGroup(dir, range, group);
  } else {
    throw new Error(
      `volume ${volume.name} is mounted by containers of different users and the Pod has no fsGroup: ` +
        'the local node cannot share it with them alone',
    );
  }
}

/** The node's folders that lead to what containers use: passable (0711) by the containers' users, never listable. */
export const PASSABLE_DIRS = ['.', 'pods', 'volumes', 'e', 't'];

/**
 * Makes `dir` (and what leads to it under stateDir) a folder containers may pass but not list, or the agent's own
 * when it cannot switch users.
 */
export function passableDir(dir: string, runAsUsers: boolean): void {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, runAsUsers && canSwitchUser() ? 0o711 : 0o700);
}

/** Folders on the way to the node's state must be passable for the containers' users. */
export function openStatePath(stateDir: string, runAsUsers: boolean): void {
  for (const dir of PASSABLE_DIRS) passableDir(join(stateDir, dir), runAsUsers);
}
