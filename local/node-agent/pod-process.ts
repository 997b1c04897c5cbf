// Turns each of a Pod's containers into a local process: command, env, working dir and the
// volumes that container mounts mapped onto folders, its user, and a kubeconfig holding the
// Pod's own ServiceAccount token when the container mounts it.
import {
  AuthenticationV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Container,
  type V1EnvVar,
  type V1Pod,
  type V1Volume,
} from '@kubernetes/client-node';
import { chmodSync, chownSync, existsSync, mkdirSync } from 'node:fs';
import { chown, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type pino from 'pino';
import { SERVICE_ACCOUNT_DIR } from '../../common/kube/connection.ts';
import { compileCacheOf } from '../staged-compile-cache.ts';
import { kubeconfigYaml } from '../control-plane/control-plane.ts';
import { containerIdOf, type IdRange } from './id-ranges.ts';
import { claimVolume, containerUser, openStatePath, passableDir, type User } from './identity.ts';
import type { StagedImage } from './image-store.ts';
import { keepSecretVolumes, type SecretVolume } from './secret-volumes.ts';

export interface NodeLayout {
  /** The images this node has, by name: each container's /app, `node` and compile cache (image-store.ts). */
  images: Readonly<Record<string, StagedImage>>;
  /** Folder for volumes and per-pod files. */
  stateDir: string;
  server: string;
  caFile: string;
  /** Run containers as their securityContext's users, on host ids of each Pod's own (root only); see identity.ts. */
  runAsUsers?: boolean;
  /**
   * Containers (by name) whose processes are isolated (root with runAsUsers only; pod-network.ts): a Pod holding one
   * gets a network namespace of its own with loopback only. With the egress proxy (a container's TETHER_EGRESS_URL)
   * all its containers join it, and the API server's, the relay's and the proxy's ports of the host's loopback are
   * carried in (carried-ports.ts); without, only these containers join it, with a model port per Pod carried in and
   * given to the others as TETHER_MODEL_PORT. These containers also get a mount namespace hiding the host's socket
   * folders (mount-view.ts).
   */
  isolatedNetwork?: { containers: string[] };
}

export interface LocalProcessSpec {
  container: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Undefined: runs as the node agent's own user. */
  user?: User;
}

/** Replaces a leading in-container path (mount path or /app) with its local folder. */
export function mapPath(value: string, mounts: Array<[string, string]>): string {
  for (const [inside, outside] of mounts) {
    if (value === inside || value.startsWith(`${inside}/`)) return outside + value.slice(inside.length);
  }
  return value;
}

export function podDir(layout: Pick<NodeLayout, 'stateDir'>, pod: V1Pod): string {
  return join(
    layout.stateDir,
    'pods',
    `${pod.metadata!.namespace}_${pod.metadata!.name}_${pod.metadata!.uid!.slice(0, 8)}`,
  );
}

export function volumeDir(layout: Pick<NodeLayout, 'stateDir'>, pod: V1Pod, volume: V1Volume): string {
  if (volume.persistentVolumeClaim)
    return join(layout.stateDir, 'volumes', pod.metadata!.namespace!, volume.persistentVolumeClaim.claimName);
  // Short: a Unix socket's path (the runner's agent channel) must fit in 107 bytes.
  if (volume.emptyDir) return join(layout.stateDir, 'e', pod.metadata!.uid!.slice(0, 8), volume.name);
  return join(podDir(layout, pod), 'volumes', volume.name);
}

async function tokenFor(
  kc: KubeConfig,
  pod: V1Pod,
  audience: string | undefined,
  expirationSeconds: number,
): Promise<string> {
  const api = kc.makeApiClient(CoreV1Api);
  const response = await api.createNamespacedServiceAccountToken({
    name: pod.spec!.serviceAccountName ?? 'default',
    namespace: pod.metadata!.namespace!,
    body: {
      spec: {
        audiences: audience ? [audience] : [],
        expirationSeconds,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: pod.metadata!.name!, uid: pod.metadata!.uid! },
      },
    },
  });
  return response.status!.token!;
}

/**
 * Writes projected volumes (tokens, CA, namespace) and Secret volumes (kept current until `stop`),
 * creates the other volume folders, and sets who may use each (`range`: the Pod's host ids; undefined when every
 * container runs as the node agent).
 */
export async function materializeVolumes(
  kc: KubeConfig,
  layout: NodeLayout,
  pod: V1Pod,
  range: IdRange | undefined,
  logger: pino.Logger,
): Promise<{ stop(): void }> {
  const asUsers = range !== undefined;
  openStatePath(layout.stateDir, asUsers);
  passableDir(podDir(layout, pod), asUsers);
  const secrets: SecretVolume[] = [];
  for (const volume of pod.spec!.volumes ?? []) {
    const dir = volumeDir(layout, pod, volume);
    passableDir(dirname(dir), asUsers);
    await mkdir(dir, { recursive: true });
    if (volume.secret) {
      secrets.push({ volume, dir });
      continue;
    }
    for (const source of volume.projected?.sources ?? []) {
      if (source.serviceAccountToken) {
        const token = await tokenFor(
          kc,
          pod,
          source.serviceAccountToken.audience,
          source.serviceAccountToken.expirationSeconds ?? 3600,
        );
        await writeFile(join(dir, source.serviceAccountToken.path), token, { mode: 0o600 });
      }
      for (const item of source.configMap?.items ?? []) {
        if (source.configMap?.name === 'kube-root-ca.crt')
          await writeFile(join(dir, item.path), await readFile(layout.caFile));
      }
      for (const item of source.downwardAPI?.items ?? []) {
        if (item.fieldRef?.fieldPath === 'metadata.namespace')
          await writeFile(join(dir, item.path), pod.metadata!.namespace!);
        if (item.fieldRef?.fieldPath === 'metadata.name') await writeFile(join(dir, item.path), pod.metadata!.name!);
      }
    }
    claimVolume(dir, pod, volume, range);
  }
  return keepSecretVolumes(kc, pod, secrets, ({ dir, volume }) => claimVolume(dir, pod, volume, range), logger);
}

async function envValue(kc: KubeConfig, pod: V1Pod, env: V1EnvVar): Promise<string | undefined> {
  if (env.value !== undefined) return env.value;
  const from = env.valueFrom;
  if (from?.fieldRef) {
    const path = from.fieldRef.fieldPath;
    if (path === 'metadata.name') return pod.metadata!.name;
    if (path === 'metadata.namespace') return pod.metadata!.namespace;
    if (path === 'metadata.uid') return pod.metadata!.uid;
    if (path === 'spec.serviceAccountName') return pod.spec!.serviceAccountName;
    throw new Error(`env ${env.name}: fieldRef ${path} is not supported by the local node agent`);
  }
  const api = kc.makeApiClient(CoreV1Api);
  const namespace = pod.metadata!.namespace!;
  const ref = from?.secretKeyRef ?? from?.configMapKeyRef;
  if (!ref) return undefined;
  try {
    const data = from?.secretKeyRef
      ? Object.fromEntries(
          Object.entries((await api.readNamespacedSecret({ name: ref.name!, namespace })).data ?? {}).map(([k, v]) => [
            k,
            Buffer.from(v, 'base64').toString('utf8'),
          ]),
        )
      : ((await api.readNamespacedConfigMap({ name: ref.name!, namespace })).data ?? {});
    if (data[ref.key] !== undefined) return data[ref.key];
  } catch (error) {
    if (!ref.optional) throw error;
    return undefined;
  }
  if (!ref.optional) throw new Error(`env ${env.name}: key ${ref.key} missing in ${ref.name}`);
  return undefined;
}

/** The Pod's sidecars (init containers that keep running) first, then its containers. */
export const podContainers = (pod: V1Pod): V1Container[] => [
  ...(pod.spec!.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'),
  ...pod.spec!.containers,
];

/**
 * The container's own temporary folder (TMPDIR), as a container has its own /tmp: the host's /tmp is
 * shared by every user. Short, like emptyDirs: Chromium and Claude Code put Unix sockets under it.
 */
function privateTmp(layout: NodeLayout, pod: V1Pod, container: V1Container, user: User): string {
  const dir = join(layout.stateDir, 't', pod.metadata!.uid!.slice(0, 8), container.name);
  passableDir(dirname(dir), true);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  chownSync(dir, user.uid, user.gid);
  return dir;
}

async function writeKubeconfig(
  layout: NodeLayout,
  pod: V1Pod,
  container: V1Container,
  saDir: string,
  user: User | undefined,
): Promise<string> {
  const kubeconfig = join(podDir(layout, pod), `${container.name}.kubeconfig`);
  const token = (await readFile(join(saDir, 'token'), 'utf8')).trim();
  // The projected ca.crt, which the container's user may read (the control plane's own folder is closed to it).
  const projectedCa = join(saDir, 'ca.crt');
  const caCert = existsSync(projectedCa) ? projectedCa : layout.caFile;
  await writeFile(kubeconfig, kubeconfigYaml(layout.server, { caCert }, { name: 'pod', token }), { mode: 0o600 });
  if (user) await chown(kubeconfig, user.uid, user.gid);
  return kubeconfig;
}

/** Everything needed to start one container as a local process (volumes already materialized). */
export async function containerProcess(
  kc: KubeConfig,
  layout: NodeLayout,
  pod: V1Pod,
  container: V1Container,
  nodeEnv: Record<string, string>,
  range: IdRange | undefined,
): Promise<LocalProcessSpec> {
  const image = layout.images[container.image ?? ''];
  if (!image)
    throw new Error(
      `pod ${pod.metadata!.name}: container ${container.name}'s image ${container.image} is not on this node`,
    );
  const volumes = new Map((pod.spec!.volumes ?? []).map((v) => [v.name, volumeDir(layout, pod, v)]));
  const mounts: Array<[string, string]> = [['/app', image.app]];
  for (const mount of container.volumeMounts ?? []) {
    const dir = volumes.get(mount.name);
    if (dir) mounts.push([mount.mountPath.replace(/\/$/, ''), mount.subPath ? join(dir, mount.subPath) : dir]);
  }
  mounts.sort((a, b) => b[0].length - a[0].length);

  const user = containerUser(pod, container, range);
  const cache = user
    ? compileCacheOf(image, user.uid, user.gid, containerIdOf(user.uid))
    : compileCacheOf(image, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
  const env: Record<string, string> = {
    ...nodeEnv,
    ...(image.path ? { PATH: image.path } : {}),
    NODE_COMPILE_CACHE: cache,
  };
  for (const item of container.env ?? []) {
    const value = await envValue(kc, pod, item);
    if (value !== undefined) env[item.name] = mapPath(value, mounts);
  }
  if (user && env.TMPDIR === undefined) env.TMPDIR = privateTmp(layout, pod, container, user);
  const saDir = mounts.find(([inside]) => inside === SERVICE_ACCOUNT_DIR)?.[1];
  if (saDir) env.KUBECONFIG = await writeKubeconfig(layout, pod, container, saDir, user);
  const [command, ...args] = [...(container.command ?? []), ...(container.args ?? [])].map((part) =>
    mapPath(part, mounts),
  );
  if (!command)
    throw new Error(
      `pod ${pod.metadata!.name}: container ${container.name} has no command ` +
        '(the local node agent does not read images)',
    );
  return {
    container: container.name,
    command: command === 'node' ? image.node : command,
    args,
    env,
    cwd: mapPath(container.workingDir ?? '/app', mounts),
    user,
  };
}

/** Who the API server thinks the kubeconfig's token is (used by tests). */
export async function whoAmI(kc: KubeConfig): Promise<string | undefined> {
  const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
  return review.status?.userInfo?.username;
}
