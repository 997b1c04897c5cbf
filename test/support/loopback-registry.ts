// A real registry on 127.0.0.1 for the node tier: the CNCF distribution registry
// (scripts/ensure-registry.sh, built once from its Go module), plain HTTP, its store in a temp folder.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { startManaged } from '../../local/control-plane/processes.ts';
import { eventually } from './eventually.ts';

const root = join(import.meta.dirname, '../..');

export interface LoopbackRegistry {
  /** 127.0.0.1:<port> */
  host: string;
  stop(): Promise<void>;
}

export async function startLoopbackRegistry(): Promise<LoopbackRegistry> {
  const dir = await mkdtemp(join(tmpdir(), 'tether-registry-'));
  const host = `127.0.0.1:${await freePort()}`;
  const registry = startManaged(
    'registry',
    join(root, 'scripts/ensure-registry.sh'),
    ['serve', join(dir, 'store'), host],
    join(dir, 'registry.log'),
  );
  const stop = async () => {
    await registry.stop(5_000);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    // The first call builds the registry (minutes); later ones start it at once.
    await eventually(
      async () => {
        if (registry.child.exitCode !== null) throw new Error(`registry exited; see ${dir}/registry.log`);
        const response = await fetch(`http://${host}/v2/`);
        if (response.status !== 200) throw new Error(`registry answered ${response.status}`);
      },
      600_000,
      250,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { host, stop };
}
