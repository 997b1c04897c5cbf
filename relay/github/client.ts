// The relay's GitHub REST client: the token is read from its file at each call (the controller
// renews it under the relay), GETs can be conditional on an ETag (a 304 costs no rate limit), and
// every failure is one plain, redacted sentence.
import { readFile } from 'node:fs/promises';
import { makeRedactor, type Redactor } from '../../common/log.ts';

export interface GitHubSettings {
  /** https://api.github.com, an Enterprise …/api/v3, or the stand-in */
  apiUrl: string;
  /** the file holding the relay's token (a Secret's key, renewed in place) */
  tokenFile: string;
  /** how long one request may take */
  timeoutMs: number;
}

export type Conditional<T> = { changed: true; body: T; etag?: string } | { changed: false };

const ERROR_TEXT_MAX = 200;

/** A refused or failed GitHub call, in words a person can act on. */
export class GitHubError extends Error {
  readonly status?: number;
  /** set when the rate limit is spent: the time (ms) it comes back */
  readonly rateLimitedUntil?: number;

  constructor(message: string, status?: number, rateLimitedUntil?: number) {
    super(message);
    this.name = 'GitHubError';
    this.status = status;
    this.rateLimitedUntil = rateLimitedUntil;
  }
}

/** `/repos/{owner}/{repo}` with both parts encoded: a record's names can never leave the repository. */
export const repoPath = (owner: string, repo: string) =>
  `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;

export class GitHubClient {
  private readonly settings: GitHubSettings;
  private readonly redact: Redactor;

  constructor(settings: GitHubSettings, redact: Redactor) {
    this.settings = settings;
    this.redact = redact;
  }

  /** A GET; with `etag`, a 304 answers `{ changed: false }`. */
  async getConditional<T>(path: string, etag?: string): Promise<Conditional<T>> {
    const response = await this.send('GET', path, undefined, etag);
    if (response.status === 304) return { changed: false };
    return { changed: true, body: response.body as T, etag: response.etag };
  }

  async get<T>(path: string): Promise<T> {
    return (await this.send('GET', path)).body as T;
  }

  async put<T>(path: string, body: unknown): Promise<T> {
    return (await this.send('PUT', path, body)).body as T;
  }

  private async token(): Promise<string> {
    let text: string;
    try {
      text = await readFile(this.settings.tokenFile, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new GitHubError(`cannot read the GitHub token file ${this.settings.tokenFile} (${code})`);
    }
    const token = text.trim();
    if (!token) throw new GitHubError(`the GitHub token file ${this.settings.tokenFile} is empty`);
    return token;
  }

  private async send(
    method: 'GET' | 'PUT',
    path: string,
    body?: unknown,
    etag?: string,
  ): Promise<{ status: number; body: unknown; etag?: string }> {
    const token = await this.token();
    const what = `GitHub ${method} ${path}`;
    let response: Response;
    try {
      response = await fetch(`${this.settings.apiUrl.replace(/\/+$/, '')}${path}`, {
        method,
        headers: {
          accept: 'application/vnd.github+json',
          'x-github-api-version': '2022-11-28',
          'user-agent': 'tether-relay',
          authorization: `Bearer ${token}`,
          ...(etag ? { 'if-none-match': etag } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.settings.timeoutMs),
        redirect: 'error',
      });
    } catch (error) {
      throw new GitHubError(this.clean(token, `${what} failed: ${failureWords(error, this.settings.timeoutMs)}`));
    }
    const text = await response.text();
    if (response.status === 304 && etag) return { status: 304, body: undefined };
    if (!response.ok)
      throw refusal(response, `${what} was refused (${response.status})`, text, (t) => this.clean(token, t));
    try {
      return {
        status: response.status,
        body: text ? JSON.parse(text) : undefined,
        etag: response.headers.get('etag') ?? undefined,
      };
    } catch {
      throw new GitHubError(`${what} answered ${response.status} with a body that is not JSON`, response.status);
    }
  }

  private clean(token: string, text: string): string {
    return makeRedactor([token])(this.redact(text));
  }
}

function failureWords(error: unknown, timeoutMs: number): string {
  const name = (error as Error).name;
  if (name === 'TimeoutError' || name === 'AbortError') return `no answer within ${timeoutMs / 1000}s`;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** GitHub's own message (cut), and when the rate limit comes back if that is the reason. */
function refusal(response: Response, prefix: string, text: string, clean: Redactor): GitHubError {
  let message: string;
  try {
    message = String((JSON.parse(text) as { message?: unknown }).message ?? '');
  } catch {
    message = text;
  }
  message = message
    .replace(/[\p{Cc}\s]+/gu, ' ')
    .trim()
    .slice(0, ERROR_TEXT_MAX);
  const limited =
    (response.status === 403 || response.status === 429) && response.headers.get('x-ratelimit-remaining') === '0';
  const reset = Number(response.headers.get('x-ratelimit-reset'));
  if (limited && Number.isFinite(reset) && reset > 0) {
    const until = reset * 1000;
    return new GitHubError(
      clean(`${prefix}: the rate limit is spent until ${new Date(until).toISOString().slice(11, 16)} UTC`),
      response.status,
      until,
    );
  }
  return new GitHubError(clean(message ? `${prefix}: ${message}` : prefix), response.status);
}
