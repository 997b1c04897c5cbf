// A Pod's Secret volumes on the local node, as a kubelet keeps them: the Pod starts once each
// Secret exists (a missing one is waited for, as a kubelet retries the mount), every key becomes a
// file, and a change to the Secret rewrites the files in place (written beside them and renamed, so a
// reader sees the old content or the new) until the Pod stops. Who may read them is claimVolume's.
import type { KubeConfig, V1KeyToPath, V1Pod, V1Secret, V1Volume } from '@kubernetes/client-node';
import { readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type pino from 'pino';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { createInformer } from '../../common/kube/informer.ts';
import { collectionPath, KINDS } from '../../common/kube/resources.ts';

/** How long a Pod waits for a Secret it mounts before it fails to start. */
export const SECRET_WAIT_MS = 120_000;

export interface SecretVolume {
  volume: V1Volume;
  dir: string;
}

/**
 * Writes the Secret's keys (or the volume's items) as files: each beside its place, `own` sets the
 * folder's owners (the new files' among them), then each is renamed into place; files of keys it
 * no longer has are removed.
 */
export function writeSecretFiles({ volume, dir }: SecretVolume, secret: V1Secret, own: () => void): void {
  const data = secret.data ?? {};
  const items: V1KeyToPath[] = volume.secret?.items ?? Object.keys(data).map((key) => ({ key, path: key }));
  const mode = volume.secret?.defaultMode ?? 0o644;
  const placed = items.filter((item) => data[item.key] !== undefined && !item.path.includes('/'));
  const temporary = (path: string) => join(dir, `..${path}.tmp`);
  for (const item of placed)
    writeFileSync(temporary(item.path), Buffer.from(data[item.key]!, 'base64'), { mode: item.mode ?? mode });
  own();
  for (const item of placed) renameSync(temporary(item.path), join(dir, item.path));
  const wanted = new Set(placed.map((item) => item.path));
  for (const name of readdirSync(dir)) if (!wanted.has(name)) rmSync(join(dir, name), { force: true });
}

/**
 * Watches each Secret volume's Secret: resolves once every one has been written, calls `written`
 * before each write lands (to set its owners), and keeps them current until `stop`.
 */
export async function keepSecretVolumes(
  kc: KubeConfig,
  pod: V1Pod,
  volumes: SecretVolume[],
  written: (volume: SecretVolume) => void,
  logger: pino.Logger,
): Promise<{ stop(): void }> {
  const namespace = pod.metadata!.namespace!;
  const informers = volumes.map((entry) => {
    const name = entry.volume.secret!.secretName!;
    const informer = createInformer<V1Secret>({
      kube: connectionFromKubeConfig(kc),
      path: collectionPath(KINDS.secrets, namespace),
      name,
      logger: logger.child({ informer: 'secret', secret: name }),
    });
    const ready = new Promise<void>((resolve) => {
      informer.onChange((_key, secret) => {
        if (!secret) return;
        writeSecretFiles(entry, secret, () => written(entry));
        resolve();
      });
    });
    return { informer, name, ready, optional: entry.volume.secret!.optional === true };
  });
  const stop = () => informers.forEach(({ informer }) => informer.stop());
  try {
    await Promise.all(informers.map(({ informer }) => informer.start()));
    await Promise.all(
      informers.map(({ name, ready, optional }) => (optional ? undefined : waitFor(ready, name, namespace))),
    );
  } catch (error) {
    stop();
    throw error;
  }
  return { stop };
}

async function waitFor(ready: Promise<void>, name: string, namespace: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`secret "${name}" not found in ${namespace} after ${SECRET_WAIT_MS / 1000}s`)),
      SECRET_WAIT_MS,
    );
  });
  try {
    await Promise.race([ready, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
