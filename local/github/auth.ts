// Who calls the stand-in and what they may do: fixed tokens (a personal token: everything), an
// App's JWT (RS256, verified with the App's public key; iat and exp checked on the stand-in's
// clock), and installation tokens the App mints with repositories, permissions and an expiry —
// checked on every REST call and, through the forge's authorize hook, on every git fetch and push.
import { createPublicKey, randomBytes, verify, type KeyObject } from 'node:crypto';
import { isoSeconds, type StandInClock } from './clock.ts';
import type { Permission, Permissions, Repository } from './model.ts';

export interface InstallationConfig {
  id: number;
  /** The account (owner) the App is installed on. */
  account: string;
  /** Repository names the installation may reach; every repository of the account when absent. */
  repositories?: string[];
  /** What the installation was granted (default contents, pull_requests, checks: write; statuses, metadata: read). */
  permissions?: Permissions;
}

export interface AppConfig {
  id: number;
  slug?: string;
  /** The App's public key (PEM or KeyObject): JWTs signed with its private key are accepted. */
  publicKey: string | KeyObject;
  installations: InstallationConfig[];
}

export interface InstallationToken {
  token: string;
  installationId: number;
  account: string;
  /** Repository names; the installation's own when absent. */
  repositories?: string[];
  permissions: Permissions;
  expiresAt: number;
}

export type Caller =
  | { kind: 'anonymous'; login: string }
  | { kind: 'static'; login: string }
  | { kind: 'installation'; login: string; grant: InstallationToken }
  | { kind: 'app'; login: string; appId: number };

export const DEFAULT_INSTALLATION_PERMISSIONS: Permissions = {
  contents: 'write',
  pull_requests: 'write',
  checks: 'write',
  statuses: 'read',
  metadata: 'read',
};

export interface AuthOptions {
  /** Tokens with every right (personal tokens); with none and no App, any request is taken. */
  tokens: string[];
  /** The login fixed tokens act as. */
  login: string;
  app?: AppConfig;
  clock: StandInClock;
  /** An installation token's life (default an hour, as GitHub's). */
  tokenLifetimeMs: number;
}

export type Refusal = { status: 401 | 403 | 404 | 422; message: string };

const covers = (granted: Permission | undefined, wanted: Permission) =>
  granted === 'write' || (granted === 'read' && wanted === 'read');

export class Auth {
  readonly tokens: InstallationToken[] = [];
  private readonly publicKey?: KeyObject;

  readonly options: AuthOptions;

  constructor(options: AuthOptions) {
    this.options = options;
    if (options.app) this.publicKey = createPublicKey(options.app.publicKey);
  }

  get appLogin(): string {
    return `${this.options.app?.slug ?? 'tether-stand-in'}[bot]`;
  }

  /** The caller an Authorization header names, or why it is refused. */
  identify(authorization: string | undefined): Caller | Refusal {
    const open = this.options.tokens.length === 0 && !this.options.app;
    const token = /^(?:bearer|token)\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    if (!token) return open ? { kind: 'anonymous', login: this.options.login } : badCredentials();
    if (this.options.tokens.includes(token)) return { kind: 'static', login: this.options.login };
    const grant = this.tokens.find((t) => t.token === token);
    if (grant) {
      if (grant.expiresAt <= this.options.clock.now()) return badCredentials();
      return { kind: 'installation', login: this.appLogin, grant };
    }
    if (token.split('.').length === 3 && this.options.app) {
      const refused = this.verifyJwt(token);
      return refused ?? { kind: 'app', login: this.appLogin, appId: this.options.app.id };
    }
    return open ? { kind: 'anonymous', login: this.options.login } : badCredentials();
  }

  /** Undefined when the JWT is the App's, signed RS256, issued in the past and not expired (≤ 10 min ahead). */
  verifyJwt(jwt: string): Refusal | undefined {
    const [head, body, sig] = jwt.split('.') as [string, string, string];
    let header: { alg?: unknown };
    let claims: { iat?: unknown; exp?: unknown; iss?: unknown };
    try {
      header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as typeof header;
      claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return { status: 401, message: 'A JSON web token could not be decoded' };
    }
    const signed = verify('RSA-SHA256', Buffer.from(`${head}.${body}`), this.publicKey!, Buffer.from(sig, 'base64url'));
    if (header.alg !== 'RS256' || !signed) return { status: 401, message: 'A JSON web token could not be decoded' };
    const now = this.options.clock.now() / 1000;
    if (String(claims.iss) !== String(this.options.app!.id)) return { status: 401, message: 'Integration not found' };
    if (typeof claims.iat !== 'number' || claims.iat > now + 1)
      return { status: 401, message: "'Issued at' claim ('iat') must be an Integer representing a time in the past" };
    if (typeof claims.exp !== 'number' || claims.exp <= now)
      return {
        status: 401,
        message:
          "'Expiration time' claim ('exp') must be a numeric value representing the future time at which " +
          'the assertion expires',
      };
    if (claims.exp > now + 600 + 1)
      return { status: 401, message: "'Expiration time' claim ('exp') is too far in the future" };
    return undefined;
  }

  installation(id: number): InstallationConfig | undefined {
    return this.options.app?.installations.find((i) => i.id === id);
  }

  /** Mints an installation token (POST /app/installations/{id}/access_tokens). */
  mint(
    installation: InstallationConfig,
    request: { repositories?: string[]; permissions?: Permissions },
  ): InstallationToken | Refusal {
    const granted = installation.permissions ?? DEFAULT_INSTALLATION_PERMISSIONS;
    const outside = (request.repositories ?? []).filter(
      (name) => installation.repositories && !installation.repositories.includes(name),
    );
    if (outside.length)
      return {
        status: 422,
        message:
          'There is at least one repository that does not exist or is not accessible to the parent installation.',
      };
    const permissions = request.permissions ?? granted;
    if (Object.entries(permissions).some(([name, level]) => !covers(granted[name], level)))
      return { status: 422, message: 'The permissions requested are not granted to this installation.' };
    const grant: InstallationToken = {
      token: `ghs_${randomBytes(18).toString('hex')}`,
      installationId: installation.id,
      account: installation.account,
      ...(request.repositories ? { repositories: request.repositories } : {}),
      permissions,
      expiresAt: this.options.clock.now() + this.options.tokenLifetimeMs,
    };
    this.tokens.push(grant);
    return grant;
  }

  /** Whether the caller may use `permission` at `level` on the repository (404 when it may not even see it). */
  check(caller: Caller, repo: Repository, permission: string, level: Permission): Refusal | undefined {
    if (caller.kind === 'anonymous' || caller.kind === 'static') return undefined;
    if (caller.kind === 'app') return { status: 403, message: 'A JSON web token cannot be used for this resource' };
    if (!this.reaches(caller.grant, repo)) return { status: 404, message: 'Not Found' };
    if (!covers(caller.grant.permissions[permission], level))
      return { status: 403, message: 'Resource not accessible by integration' };
    return undefined;
  }

  /** The forge's question: may this token (Basic x-access-token:<token>) fetch from, or push to, the repository? */
  gitAllows(token: string | undefined, repo: Repository | undefined, write: boolean): boolean {
    if (!token || !repo) return false;
    if (this.options.tokens.includes(token)) return true;
    const grant = this.tokens.find((t) => t.token === token);
    if (!grant || grant.expiresAt <= this.options.clock.now() || !this.reaches(grant, repo)) return false;
    return covers(grant.permissions.contents, write ? 'write' : 'read');
  }

  private reaches(grant: InstallationToken, repo: Repository): boolean {
    if (repo.owner.toLowerCase() !== grant.account.toLowerCase()) return false;
    const names = grant.repositories ?? this.installation(grant.installationId)?.repositories;
    return !names || names.includes(repo.name);
  }
}

const badCredentials = (): Refusal => ({ status: 401, message: 'Bad credentials' });

export const tokenJson = (grant: InstallationToken, repositories?: unknown[]) => ({
  token: grant.token,
  expires_at: isoSeconds(grant.expiresAt),
  permissions: grant.permissions,
  repository_selection: grant.repositories ? 'selected' : 'all',
  ...(repositories ? { repositories } : {}),
});
