// The GitHub stand-in as the local stack uses it (`make dev`, the end-to-end harness): the
// runners' token, the relay's webhook secret (deliveries to <relay>/github/webhook once the relay
// is up) and, when asked, an App whose private key is a file only the controller is given.
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { writePrivateFile } from '../private-files.ts';
import type { StackGitHub } from '../stack-env.ts';
import { makeAppKeys, type AppKeys } from './app-keys.ts';
import { startGitHubStandIn, type GitHubStandIn, type GitHubStandInOptions } from './stand-in.ts';

/** The App of the local stack: one installation, on the repositories' owner, reaching all of them. */
export const LOCAL_APP = { id: 1, installationId: 1 };

export interface LocalGitHubOptions {
  /** The token runners (and the relay) use: every right. */
  token: string;
  stateDir: string;
  /** Signs deliveries to the relay with this secret (a made-up one when true). */
  webhooks?: boolean | string;
  /** An App installed on `account` (default acme); its private key is written under stateDir. */
  app?: boolean;
  account?: string;
  /** More of the stand-in's options (root, repositories, CI, token lifetime, retries). */
  standIn?: Omit<GitHubStandInOptions, 'token' | 'app'>;
}

export interface LocalGitHub {
  github: GitHubStandIn;
  /** For startStack: the relay's webhook secret, the controller's App. */
  stack: Omit<StackGitHub, 'relayTokenFile'>;
  app?: { id: number; installationId: number; keys: AppKeys };
  /** Starts delivering the stand-in's webhooks to the relay at relayUrl. */
  deliverTo(relayUrl: string): void;
}

export async function startLocalGitHub(options: LocalGitHubOptions): Promise<LocalGitHub> {
  const secret = typeof options.webhooks === 'string' ? options.webhooks : randomBytes(24).toString('hex');
  const keys = options.app ? makeAppKeys() : undefined;
  const github = await startGitHubStandIn({
    ...options.standIn,
    token: options.token,
    ...(keys
      ? {
          app: {
            id: LOCAL_APP.id,
            publicKey: keys.publicKeyPem,
            installations: [{ id: LOCAL_APP.installationId, account: options.account ?? 'acme' }],
          },
        }
      : {}),
  });
  let privateKeyFile: string | undefined;
  if (keys) {
    privateKeyFile = join(options.stateDir, 'github-app-private-key.pem');
    await writePrivateFile(privateKeyFile, keys.privateKeyPem);
  }
  return {
    github,
    stack: {
      ...(options.webhooks ? { webhookSecret: secret } : {}),
      ...(privateKeyFile ? { app: { ...LOCAL_APP, privateKeyFile } } : {}),
    },
    ...(keys ? { app: { ...LOCAL_APP, keys } } : {}),
    deliverTo(relayUrl) {
      if (options.webhooks) github.addWebhook({ url: `${relayUrl}/github/webhook`, secret });
    },
  };
}

/**
 * The served folders (`<root>/<owner>/<name>.git`) the stand-in takes with their git. GitHub has one
 * owner/name: two folders of the same owner/name (in different roots) are left out (taken without git).
 */
export function repositoriesOf(folders: string[]): Array<{ owner: string; name: string; path: string }> {
  const slugOf = (folder: string) => `${basename(dirname(folder))}/${basename(folder, '.git')}`;
  return folders
    .filter((folder) => folders.filter((other) => slugOf(other) === slugOf(folder)).length === 1)
    .map((path) => ({ owner: basename(dirname(path)), name: basename(path, '.git'), path }));
}
