// A cgroup (v1, cgroupfs driver) of the tier's own under which kubelet puts its kubepods
// hierarchy: two tiers on one machine never see each other's Pod cgroups as orphans to kill.
import { mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const CGROUP_FS = '/sys/fs/cgroup';

async function hierarchies(): Promise<string[]> {
  const entries = await readdir(CGROUP_FS);
  const mounts: string[] = [];
  for (const name of entries) {
    const path = join(CGROUP_FS, name);
    if ((await stat(path)).isDirectory()) mounts.push(path);
  }
  return mounts;
}

/** Creates `/<name>` in every hierarchy (cpuset seeded from its parent); returns the cgroupRoot for kubelet. */
export async function createCgroupRoot(name: string): Promise<string> {
  for (const hierarchy of await hierarchies()) {
    const path = join(hierarchy, name);
    await mkdir(path, { recursive: true });
    if (hierarchy.endsWith('/cpuset')) {
      for (const file of ['cpuset.cpus', 'cpuset.mems'])
        await writeFile(join(path, file), await readFile(join(hierarchy, file)));
    }
  }
  return `/${name}`;
}

async function removeTree(path: string): Promise<void> {
  const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) if (entry.isDirectory()) await removeTree(join(path, entry.name));
  await rmdir(path).catch(() => undefined);
}

/** Removes the tier's cgroups (empty once every Pod is gone), deepest first. */
export async function removeCgroupRoot(name: string): Promise<void> {
  for (const hierarchy of await hierarchies()) await removeTree(join(hierarchy, name));
}
