// The agent's .git, new for each prepare: made in the private folder as a clone of the store and
// copied in whole through workspace-fs — the branch at the base, origin/<branch> at the latest fetch,
// origin = the URL without credentials, the base's index (without stat data: the agent's git refreshes it).
// The whole history while the store's packs are small; past that, copied in for every command it would
// cost more than the rest of the start, so the clone is shallow: the last AGENT_HISTORY.depth commits.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { withWorkspaceDir, type WorkspaceDir } from '../workspace/fs.ts';
import { BASE_REF } from './store-upkeep.ts';

export interface AgentGitPlace {
  /** git in the private folder (store.ts's run): gitDir null for none, else the repository to use. */
  run: (args: string[], options: { gitDir?: string | null; index?: string }) => Promise<string>;
  store: string;
  /** The private scratch folder the clone is made in. */
  scratch: string;
  workspace: string;
  checkout: string;
}

/**
 * Up to `fullUpToKiB` of packed objects in the store the agent gets the whole history, else the last `depth`
 * commits.
 */
export const AGENT_HISTORY = { fullUpToKiB: 100 * 1024, depth: 100 };

/** The clone's arguments: a shallow one goes through upload-pack (a plain local clone ignores --depth). */
async function cloneArgs(at: AgentGitPlace, branch: string, into: string): Promise<string[]> {
  const counted = await at.run(['count-objects', '-v'], {});
  const packedKiB = Number(/^size-pack: (\d+)$/m.exec(counted)?.[1] ?? 0);
  const clone = ['clone', '--quiet', '--no-checkout', '--branch', branch];
  if (packedKiB <= AGENT_HISTORY.fullUpToKiB) return [...clone, '--end-of-options', at.store, into];
  return [...clone, `--depth=${AGENT_HISTORY.depth}`, '--end-of-options', `file://${at.store}`, into];
}

export async function replaceAgentGit(
  at: AgentGitPlace,
  url: string,
  branch: string,
  base: string,
  latest: string,
): Promise<void> {
  const made = await mkdtemp(join(at.scratch, 'clone-'));
  try {
    await at.run(await cloneArgs(at, branch, made), { gitDir: null });
    const gitDir = join(made, '.git');
    if (base !== latest) {
      // A shallow clone may lack the base (kept changes on an older one): the store records it (store-upkeep.ts).
      const shallow = existsSync(join(gitDir, 'shallow'));
      if (shallow) await at.run(['fetch', '--quiet', `--depth=${AGENT_HISTORY.depth}`, 'origin', BASE_REF], { gitDir });
      await at.run(['update-ref', '--end-of-options', `refs/heads/${branch}`, base], { gitDir });
    }
    await at.run(['config', '--end-of-options', 'remote.origin.url', url], { gitDir });
    await at.run(['read-tree', '--end-of-options', base], { gitDir, index: join(gitDir, 'index') });
    await withWorkspaceDir(at.workspace, '', async (root) => {
      const staging = `.tether-git-${randomBytes(8).toString('hex')}`;
      const folder = await root.makeDir(staging, 0o777);
      try {
        const copy = await folder.makeDir('git', 0o777);
        await copyFolderIn(gitDir, copy).finally(() => copy.close());
        const checkout = await root.dir(at.checkout);
        await checkout
          .remove('.git')
          .then(() => folder.moveTo('git', checkout, '.git'))
          .finally(() => checkout.close());
      } finally {
        await folder.close();
        await root.remove(staging);
      }
    });
  } finally {
    await rm(made, { recursive: true, force: true });
  }
}

/** Copies a folder of the supervisor's own (a fresh clone's `.git`) into `into`: folders and regular files only. */
async function copyFolderIn(source: string, into: WorkspaceDir): Promise<void> {
  for (const entry of await readdir(source, { withFileTypes: true })) {
    const from = join(source, entry.name);
    if (entry.isFile()) await into.copyIn(entry.name, from);
    else if (entry.isDirectory()) {
      const dir = await into.makeDir(entry.name, 0o777);
      await copyFolderIn(from, dir).finally(() => dir.close());
    } else throw new Error(`${from} is neither a file nor a folder`);
  }
}
