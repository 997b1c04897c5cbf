// `make dev`'s local remotes: the default repository (the sample one, or a folder given as
// TETHER_REPO_URL) and every folder named in TETHER_REPOS are served like a forge (git-forge.ts)
// with the runners' token, so no runner or agent opens a remote's files; the relay and the
// controller are given the forge URLs in their place.
import { dirname, join } from 'node:path';
import { ensureSampleRepo, serveRemotes, type ForgeHooks, type ServedRemotes } from './sample-repo.ts';

export interface LocalRemotes {
  /** The default repository's URL (the forge's when it is a local folder). */
  repoUrl: string;
  /** The relay's settings with every local folder in TETHER_REPOS replaced by its forge URL. */
  relayEnv: Record<string, string>;
  /** The default repository's folder, when it is local. */
  path?: string;
  /** Every bare repository served (`<root>/<owner>/<name>.git`). */
  folders: string[];
  close(): Promise<void>;
}

const isFolder = (url: string) => url.startsWith('/');

/** Serves each local folder among the repositories (one forge per `<root>/<owner>/<name>.git` root). */
export async function serveLocalRemotes(
  stateDir: string,
  repoUrl: string | undefined,
  relayEnv: Record<string, string>,
  token: string,
  hooks: ForgeHooks = {},
): Promise<LocalRemotes> {
  const path =
    repoUrl === undefined ? await ensureSampleRepo(join(stateDir, 'remote')) : isFolder(repoUrl) ? repoUrl : undefined;
  const listed = relayEnv.TETHER_REPOS ? (JSON.parse(relayEnv.TETHER_REPOS) as { url: string }[]) : [];
  const folders = [...new Set([...(path ? [path] : []), ...listed.map((r) => r.url).filter(isFolder)])];
  const byRoot = new Map<string, string[]>();
  for (const folder of folders)
    byRoot.set(dirname(dirname(folder)), [...(byRoot.get(dirname(dirname(folder))) ?? []), folder]);
  const served: ServedRemotes[] = [];
  const urlOf = new Map<string, string>();
  for (const [root, repositories] of byRoot) {
    const forge = await serveRemotes(root, repositories, token, hooks);
    served.push(forge);
    for (const folder of repositories) urlOf.set(folder, forge.urlOf(folder));
  }
  const forgeUrl = (url: string) => urlOf.get(url) ?? url;
  return {
    repoUrl: path ? forgeUrl(path) : repoUrl!,
    relayEnv: relayEnv.TETHER_REPOS
      ? { ...relayEnv, TETHER_REPOS: JSON.stringify(listed.map((r) => ({ ...r, url: forgeUrl(r.url) }))) }
      : relayEnv,
    ...(path ? { path } : {}),
    folders,
    close: async () => {
      for (const forge of served) await forge.forge.close();
    },
  };
}
