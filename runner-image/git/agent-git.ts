// The agent's .git, new for each prepare: made in the private folder as a clone of the store and
// copied in whole through workspace-fs — the branch at the base, origin/<branch> at the latest fetch,
// origin = the URL without credentials, the base's index (without stat data: the agent's git refreshes it).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { withWorkspaceDir, type WorkspaceDir } from '../workspace/fs.ts';

export interface AgentGitPlace {
  /** git in the private folder (store.ts's run): gitDir null for none, else the repository to use. */
  run: (args: string[], options: { gitDir?: string | null; index?: string }) => Promise<string>;
  store: string;
  /** The private scratch folder the clone is made in. */
  scratch: string;
  workspace: string;
  checkout: string;
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
    await at.run(['clone', '--quiet', '--no-checkout', '--branch', branch, '--end-of-options', at.store, made], {
      gitDir: null,
    });
    const gitDir = join(made, '.git');
    await at.run(['config', '--end-of-options', 'remote.origin.url', url], { gitDir });
    if (base !== latest) await at.run(['update-ref', '--end-of-options', `refs/heads/${branch}`, base], { gitDir });
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
