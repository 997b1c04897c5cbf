// The controller as a GitHub App: a JWT signed with the App's private key (RS256, node:crypto) and,
// with it, installation tokens scoped to repositories and permissions (POST
// /app/installations/{id}/access_tokens). The key file is read at each mint, so a rotated key is
// used at once; the key and the JWT go nowhere but this request's signature and header.
import { createPrivateKey, sign } from 'node:crypto';
import { readFile } from 'node:fs/promises';

/** A JWT's iat is set this far back, for clocks that run behind GitHub's. */
const CLOCK_DRIFT_SECONDS = 60;
/** GitHub refuses a JWT that expires more than 10 minutes after it was issued. */
const JWT_LIFETIME_SECONDS = 9 * 60;
const REQUEST_TIMEOUT_MS = 30_000;

export interface GitHubAppSettings {
  appId: string;
  installationId: string;
  /** The PEM file of the App's private key: a Secret only the controller mounts. */
  privateKeyFile: string;
  /** REST base URL (https://api.github.com, Enterprise's, or a stand-in). */
  apiUrl: string;
}

export type Permission = 'read' | 'write';

/** What a token is for: some repositories of the installation (all when absent), these permissions only. */
export interface TokenScope {
  repositories?: string[];
  permissions: Record<string, Permission>;
}

export interface InstallationToken {
  token: string;
  /** ISO 8601, as GitHub says it. */
  expiresAt: string;
}

/** A runner's token: its one repository's contents and pull requests, and reading check runs. */
export const RUNNER_PERMISSIONS = { contents: 'write', pull_requests: 'write', checks: 'read' } as const;
/**
 * The relay's token: every repository of the installation, the runner's permissions (merge, reviews,
 * polls) and reading commit statuses (*merge* weighs them beside the check runs).
 */
export const RELAY_PERMISSIONS = { ...RUNNER_PERMISSIONS, statuses: 'read' } as const;

const base64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

/** The App's JWT: RS256, iss the App id, issued a minute back, expiring 9 minutes from now. */
export function appJwt(appId: string, privateKeyPem: string, now: Date): string {
  const seconds = Math.floor(now.getTime() / 1000);
  const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const claims = { iat: seconds - CLOCK_DRIFT_SECONDS, exp: seconds + JWT_LIFETIME_SECONDS, iss: appId };
  const signed = `${header}.${base64url(JSON.stringify(claims))}`;
  let key;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch (error) {
    // Node's message names the decoder, never the key's bytes.
    throw new Error(`the GitHub App private key is not a PEM private key: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (key.asymmetricKeyType !== 'rsa') throw new Error('the GitHub App private key is not an RSA key');
  return `${signed}.${base64url(sign('sha256', Buffer.from(signed), key))}`;
}

export interface GitHubApp {
  /** A fresh installation token for `scope`; rejects with GitHub's status and message. */
  mint(scope: TokenScope): Promise<InstallationToken>;
}

export function githubApp(settings: GitHubAppSettings, now: () => Date = () => new Date()): GitHubApp {
  const installation = encodeURIComponent(settings.installationId);
  const url = `${settings.apiUrl.replace(/\/$/, '')}/app/installations/${installation}/access_tokens`;
  return {
    async mint(scope) {
      const jwt = appJwt(settings.appId, await readFile(settings.privateKeyFile, 'utf8'), now());
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          accept: 'application/vnd.github+json',
          authorization: `Bearer ${jwt}`,
          'content-type': 'application/json',
          'user-agent': 'tether-controller',
          'x-github-api-version': '2022-11-28',
        },
        body: JSON.stringify(scope),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      const where = scope.repositories ? ` for ${scope.repositories.join(', ')}` : '';
      if (!response.ok) {
        const message = messageOf(text);
        throw new Error(`GitHub refused an installation token${where} (${response.status})${message}`);
      }
      const body = JSON.parse(text) as { token?: unknown; expires_at?: unknown };
      if (typeof body.token !== 'string' || typeof body.expires_at !== 'string' || !Date.parse(body.expires_at))
        throw new Error(`GitHub answered an installation token request${where} without token and expires_at`);
      return { token: body.token, expiresAt: new Date(body.expires_at).toISOString() };
    },
  };
}

/** GitHub's own words on a refusal (its JSON `message`), cut short; nothing else of the body. */
function messageOf(text: string): string {
  try {
    const message = (JSON.parse(text) as { message?: unknown }).message;
    return typeof message === 'string' ? `: ${message.slice(0, 200)}` : '';
  } catch {
    return '';
  }
}
