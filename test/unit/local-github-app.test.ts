// The GitHub stand-in's App: JWTs verified with the App's public key (iat, exp, iss), installation
// tokens minted with repositories, permissions and an expiry on the stand-in's clock — enforced on
// REST calls and on git fetch and push through the forge.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appJwt, makeAppKeys } from '../../local/github/app-keys.ts';
import { startGitHubWorkbench, type GitHubWorkbench } from '../../local/github/workbench.ts';

const APP_ID = 4242;
const INSTALLATION = 77;
const keys = makeAppKeys();
let bench: GitHubWorkbench;
beforeAll(async () => {
  bench = await startGitHubWorkbench({
    more: ['other', 'private'],
    webhookSecret: 'hook-secret',
    app: {
      id: APP_ID,
      publicKey: keys.publicKeyPem,
      installations: [{ id: INSTALLATION, account: 'acme', repositories: ['sample', 'other'] }],
    },
  });
});
afterAll(() => bench?.close());

const call = (path: string, token: string, init: { method?: string; json?: unknown } = {}) =>
  fetch(`${bench.github.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
  });
const jwt = (claims = {}) => appJwt(APP_ID, keys.privateKeyPem, bench.github.clock.now(), claims);

async function mint(json: unknown) {
  const response = await call(`/app/installations/${INSTALLATION}/access_tokens`, jwt(), { method: 'POST', json });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}
const PER_SESSION = { contents: 'write', pull_requests: 'write', checks: 'read' };

describe('the GitHub stand-in: App JWT', () => {
  it('takes a JWT signed with the App key and refuses a forged, expired, future, too long or foreign one', async () => {
    expect((await call('/app', jwt())).status).toBe(200);
    const other = makeAppKeys();
    const now = Math.floor(bench.github.clock.now() / 1000);
    const refused = {
      forged: appJwt(APP_ID, other.privateKeyPem, bench.github.clock.now()),
      expired: jwt({ iat: now - 700, exp: now - 10 }),
      future: jwt({ iat: now + 120, exp: now + 500 }),
      tooLong: jwt({ iat: now - 60, exp: now + 3600 }),
      foreign: jwt({ iss: '999' }),
      garbage: 'a.b.c',
    };
    for (const [name, token] of Object.entries(refused))
      expect([name, (await call('/app/installations', token)).status]).toEqual([name, 401]);
  });

  it('is not a token for repositories, and a personal token is not a JWT', async () => {
    expect((await call('/repos/acme/sample/pulls', jwt())).status).toBe(403);
    expect((await call('/app', bench.token)).status).toBe(401);
  });
});

describe('the GitHub stand-in: installation tokens', () => {
  it('mints a token scoped to the repositories and permissions asked for, expiring in an hour', async () => {
    const minted = await mint({ repositories: ['sample'], permissions: PER_SESSION });
    expect(minted.status).toBe(201);
    expect(minted.body).toMatchObject({ permissions: PER_SESSION, repository_selection: 'selected' });
    expect(minted.body.token).toMatch(/^ghs_/);
    const expires = Date.parse(String(minted.body.expires_at));
    expect(Math.abs(expires - (bench.github.clock.now() + 3_600_000))).toBeLessThan(2000);
  });

  it('lists the installation, and a token sees the repositories it was minted for', async () => {
    const installation = await call(`/app/installations/${INSTALLATION}`, jwt());
    expect(await installation.json()).toMatchObject({ id: INSTALLATION, app_id: APP_ID, account: { login: 'acme' } });
    const token = String((await mint({ repositories: ['sample'], permissions: PER_SESSION })).body.token);
    const repos = (await (await call('/installation/repositories', token)).json()) as { repositories: unknown[] };
    expect(repos.repositories).toEqual([expect.objectContaining({ full_name: 'acme/sample' })]);
    expect((await call('/installation/repositories', bench.token)).status).toBe(403);
  });

  it('refuses a repository outside the installation and permissions it was not granted', async () => {
    expect((await mint({ repositories: ['private'] })).status).toBe(422);
    expect((await mint({ permissions: { administration: 'write' } })).status).toBe(422);
    const unknown = await call('/app/installations/5/access_tokens', jwt(), { method: 'POST', json: {} });
    expect(unknown.status).toBe(404);
  });

  it('reaches only its repository over REST and only with its permissions', async () => {
    const token = String((await mint({ repositories: ['sample'], permissions: PER_SESSION })).body.token);
    expect((await call('/repos/acme/sample/pulls', token)).status).toBe(200);
    expect((await call('/repos/acme/other/pulls', token)).status).toBe(404);
    const head = await bench.push('tether/app-rest', { 'a.txt': 'a\n' });
    const check = await call('/repos/acme/sample/check-runs', token, {
      method: 'POST',
      json: { name: 'ci', head_sha: head, conclusion: 'success' },
    });
    expect(check.status).toBe(403);
    const opened = await call('/repos/acme/sample/pulls', token, {
      method: 'POST',
      json: { title: 'by the app', head: 'tether/app-rest', base: 'main' },
    });
    expect(opened.status).toBe(201);
    expect(((await opened.json()) as { user: { login: string } }).user.login).toBe('tether-stand-in[bot]');
  });

  it('reads commit statuses with statuses: read, creates them only with statuses: write', async () => {
    const head = await bench.push('tether/app-status', { 's.txt': 's\n' });
    await bench.github.createStatus('acme', 'sample', head, { state: 'failure', context: 'ci/jenkins' });
    const status = `/repos/acme/sample/commits/${head}/status`;
    const post = { method: 'POST', json: { state: 'success', context: 'ci/jenkins' } };
    const runner = String((await mint({ repositories: ['sample'], permissions: PER_SESSION })).body.token);
    expect((await call(status, runner)).status).toBe(403);
    const relay = String((await mint({ permissions: { ...PER_SESSION, statuses: 'read' } })).body.token);
    const read = await call(status, relay);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ state: 'failure', statuses: [{ context: 'ci/jenkins' }] });
    expect((await call(`/repos/acme/sample/statuses/${head}`, relay, post)).status).toBe(403);
    expect((await mint({ permissions: { statuses: 'write' } })).status).toBe(422);
  });

  it('pushes with the token only to its repository and only with contents: write', async () => {
    const token = String((await mint({ repositories: ['sample'], permissions: PER_SESSION })).body.token);
    await bench.push('tether/app-git', { 'b.txt': 'b\n' }, { token });
    await bench.github.createPull('acme', 'sample', { title: 'git', head: 'tether/app-git', base: 'main' });
    await bench.push('tether/app-git', { 'b.txt': 'b2\n' }, { token });
    await bench.github.deliveriesSettled();
    const sync = bench.github.deliveries.find((d) => d.action === 'synchronize')!;
    expect(sync.payload.sender).toMatchObject({ login: 'tether-stand-in[bot]', type: 'Bot' });
    await expect(bench.push('tether/app-git', { 'b.txt': 'b\n' }, { token, repo: 'other' })).rejects.toThrow(/403/);
    const reader = String((await mint({ repositories: ['sample'], permissions: { contents: 'read' } })).body.token);
    await expect(bench.push('tether/app-git', { 'c.txt': 'c\n' }, { token: reader })).rejects.toThrow(/403/);
    const fetched = await fetch(`${bench.remoteUrl}/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x-access-token:${reader}`).toString('base64')}` },
    });
    expect(fetched.status).toBe(200);
  });

  it('stops working at its expiry on the stand-in clock, on REST and on git; a new one works', async () => {
    bench.github.setTokenLifetime(30 * 60_000);
    const token = String((await mint({ repositories: ['sample'], permissions: PER_SESSION })).body.token);
    bench.github.clock.advance(29 * 60_000);
    expect((await call('/repos/acme/sample/pulls', token)).status).toBe(200);
    bench.github.clock.advance(2 * 60_000);
    expect((await call('/repos/acme/sample/pulls', token)).status).toBe(401);
    await expect(bench.push('tether/app-late', { 'd.txt': 'd\n' }, { token })).rejects.toThrow(/403/);
    const fresh = String((await mint({ repositories: ['sample'], permissions: PER_SESSION })).body.token);
    await bench.push('tether/app-late', { 'd.txt': 'd\n' }, { token: fresh });
    expect(bench.github.tokens.at(-1)!.token).toBe(fresh);
  });
});
