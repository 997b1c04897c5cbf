// The relay's GitHub client: the token file read at each call, ETag → 304, and failures in plain,
// redacted words (a refused call, no answer in time, a spent rate limit, no token file).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeRedactor } from '../../common/log.ts';
import { GitHubClient, GitHubError } from '../../relay/github/client.ts';

let dir: string;
let server: Server | undefined;
const seen: IncomingMessage[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-client-'));
  seen.length = 0;
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  server = createServer((req, res) => {
    seen.push(req);
    handle(req, res);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function client(apiUrl: string, timeoutMs = 5000) {
  const tokenFile = join(dir, 'token');
  return { tokenFile, client: new GitHubClient({ apiUrl, tokenFile, timeoutMs }, makeRedactor()) };
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

describe('GitHubClient', () => {
  it('reads the token file at each call, so a renewed token is used at once', async () => {
    const url = await serve((_req, res) => json(res, 200, { ok: true }));
    const { tokenFile, client: gh } = client(url);
    writeFileSync(tokenFile, 'ghs_first\n');
    await gh.get('/rate_limit');
    writeFileSync(tokenFile, 'ghs_second');
    await gh.get('/rate_limit');
    expect(seen.map((r) => r.headers.authorization)).toEqual(['Bearer ghs_first', 'Bearer ghs_second']);
  });

  it('sends If-None-Match and answers a 304 as unchanged', async () => {
    const url = await serve((req, res) =>
      req.headers['if-none-match'] === '"v1"' ? res.writeHead(304).end() : json(res, 200, { n: 1 }, { etag: '"v1"' }),
    );
    const { tokenFile, client: gh } = client(url);
    writeFileSync(tokenFile, 'token-value');
    const first = await gh.getConditional<{ n: number }>('/repos/acme/web/pulls/1');
    expect(first).toEqual({ changed: true, body: { n: 1 }, etag: '"v1"' });
    expect(await gh.getConditional('/repos/acme/web/pulls/1', '"v1"')).toEqual({ changed: false });
  });

  it("says what GitHub refused, with GitHub's message, and never the token", async () => {
    const token = 'plain-relay-token-1234';
    const url = await serve((_req, res) => json(res, 404, { message: `Not Found for ${token}\n` }));
    const { tokenFile, client: gh } = client(url);
    writeFileSync(tokenFile, token);
    const error = await gh.get('/repos/acme/web/pulls/9').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubError);
    expect((error as GitHubError).status).toBe(404);
    expect((error as Error).message).toBe(
      'GitHub GET /repos/acme/web/pulls/9 was refused (404): Not Found for [redacted]',
    );
  });

  it('says when the rate limit comes back', async () => {
    const url = await serve((_req, res) =>
      json(
        res,
        403,
        { message: 'API rate limit exceeded' },
        { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1795000000' },
      ),
    );
    const { tokenFile, client: gh } = client(url);
    writeFileSync(tokenFile, 'token-value');
    const error = (await gh.get('/x').catch((e: unknown) => e)) as GitHubError;
    expect(error.message).toBe('GitHub GET /x was refused (403): the rate limit is spent until 11:06 UTC');
    expect(error.rateLimitedUntil).toBe(1_795_000_000_000);
  });

  it('gives up after its timeout, in words', async () => {
    const url = await serve(() => undefined);
    const { tokenFile, client: gh } = client(url, 300);
    writeFileSync(tokenFile, 'token-value');
    await expect(gh.get('/slow')).rejects.toThrow('GitHub GET /slow failed: no answer within 0.3s');
  });

  it('names a missing or empty token file, and calls nothing', async () => {
    const url = await serve((_req, res) => json(res, 200, {}));
    const { tokenFile, client: gh } = client(url);
    await expect(gh.get('/x')).rejects.toThrow(`cannot read the GitHub token file ${tokenFile} (ENOENT)`);
    writeFileSync(tokenFile, '\n');
    await expect(gh.get('/x')).rejects.toThrow(`the GitHub token file ${tokenFile} is empty`);
    expect(seen).toHaveLength(0);
  });

  it('refuses a redirect rather than follow it with the token', async () => {
    const url = await serve((_req, res) => res.writeHead(302, { location: 'http://127.0.0.1:9/elsewhere' }).end());
    const { tokenFile, client: gh } = client(url);
    writeFileSync(tokenFile, 'token-value');
    await expect(gh.get('/moved')).rejects.toThrow('GitHub GET /moved failed: unexpected redirect');
  });
});
