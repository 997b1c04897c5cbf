// The node's storage: a no-provisioner StorageClass (default class, WaitForFirstConsumer) and
// a pool of local PersistentVolumes on folders of the tier, bound for real by the
// controller-manager's PV controller once the scheduler has placed the first Pod.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, StorageV1Api, type KubeConfig, type V1PersistentVolume } from '@kubernetes/client-node';
import { STORAGE_CLASS, VOLUME_CAPACITY, VOLUME_POOL_SIZE } from './settings.ts';

function poolVolume(name: string, path: string, nodeName: string): V1PersistentVolume {
  return {
    metadata: { name, labels: { 'tether.dev/volume-pool': STORAGE_CLASS } },
    spec: {
      capacity: { storage: VOLUME_CAPACITY },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: STORAGE_CLASS,
      volumeMode: 'Filesystem',
      local: { path },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [nodeName] }] },
          ],
        },
      },
    },
  };
}

/** Creates the StorageClass and the pool; returns the folders behind the volumes, by PV name. */
export async function createVolumePool(kc: KubeConfig, dir: string, nodeName: string): Promise<Map<string, string>> {
  await kc.makeApiClient(StorageV1Api).createStorageClass({
    body: {
      metadata: { name: STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Retain',
    },
  });
  const core = kc.makeApiClient(CoreV1Api);
  const folders = new Map<string, string>();
  for (let i = 0; i < VOLUME_POOL_SIZE; i++) {
    const name = `${nodeName}-pv-${i}`;
    const path = join(dir, name);
    await mkdir(path, { recursive: true });
    await core.createPersistentVolume({ body: poolVolume(name, path, nodeName) });
    folders.set(name, path);
  }
  return folders;
}
