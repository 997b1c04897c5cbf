// The controller as a GitHub App: the JWT (RS256, iat a minute back, exp within 10 minutes, iss the
// App id) checked with the public key by a loopback server, the mint request's scope, refusals, a
// rotated key; and whole reconcile passes that give a runner Pod its token, renew it before expiry,
// and mount it into the runner container only.
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerName } from '../../common/session/names.ts';
import { desiredPod } from '../../controller/builders.ts';
import { appJwt, githubApp, RELAY_PERMISSIONS, type GitHubApp, type TokenScope } from '../../controller/github-app.ts';
import { ANNOTATION_TOKEN_EXPIRES, RENEW_BEFORE_MS } from '../../controller/runner-token.ts';
import { fakeWorld } from './controller-fake-cluster.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';

const pem = () =>
  generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const KEY = pem();
const NOW = Date.parse('2026-11-27T09:00:00Z');

function claimsOf(jwt: string, key: string) {
  const [header, claims, signature] = jwt.split('.') as [string, string, string];
  const valid = verify(
    'sha256',
    Buffer.from(`${header}.${claims}`),
    createPublicKey(key),
    Buffer.from(signature, 'base64url'),
  );
  return {
    valid,
    header: JSON.parse(Buffer.from(header, 'base64url').toString()) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(claims, 'base64url').toString()) as { iat: number; exp: number; iss: string },
  };
}

describe('the App JWT', () => {
  it('is RS256 over iat a minute back, exp within ten minutes, iss the App id', () => {
    const { valid, header, claims } = claimsOf(appJwt('4242', KEY, new Date(NOW)), KEY);
    expect(valid).toBe(true);
    expect(header).toEqual({ alg: 'RS256', typ: 'JWT' });
    expect(claims.iss).toBe('4242');
    expect(claims.iat).toBe(NOW / 1000 - 60);
    expect(claims.exp).toBeGreaterThan(NOW / 1000);
    expect(claims.exp - claims.iat).toBeLessThanOrEqual(600);
  });

  it('refuses a key that is not an RSA private key, without echoing it', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    expect(() => appJwt('1', String(ec), new Date(NOW))).toThrow('the GitHub App private key is not an RSA key');
    const garbage = '-----BEGIN PRIVATE KEY-----\nnot-a-key-canary\n-----END PRIVATE KEY-----\n';
    expect(() => appJwt('1', garbage, new Date(NOW))).toThrow(/^the GitHub App private key is not a PEM private key/);
    expect(() => appJwt('1', garbage, new Date(NOW))).not.toThrow(/canary/);
  });
});

describe('minting an installation token', () => {
  let server: Server;
  let dir: string;
  const requests: Array<{ url: string; auth: string; body: TokenScope }> = [];
  let answer: { status: number; body: object } = { status: 201, body: {} };
  let publicKey = KEY;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'app-key-'));
    server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        const auth = req.headers.authorization ?? '';
        requests.push({ url: req.url!, auth, body: JSON.parse(text) as TokenScope });
        const jwt = claimsOf(auth.replace(/^Bearer /, ''), publicKey);
        const status = jwt.valid ? answer.status : 401;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(jwt.valid ? answer.body : { message: 'A JSON web token could not be decoded' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const app = (file: string) =>
    githubApp({
      appId: '7',
      installationId: '99',
      privateKeyFile: file,
      apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    });

  it(`posts the scope with the App's JWT and returns the token; a rotated key file is read at the next \
mint`, async () => {
    const file = join(dir, 'key.pem');
    writeFileSync(file, KEY);
    answer = { status: 201, body: { token: 'ghs_minted0token0value000000000', expires_at: '2026-11-27T10:00:00Z' } };
    const scope = { repositories: ['web'], permissions: { contents: 'write' as const } };
    await expect(app(file).mint(scope)).resolves.toEqual({
      token: 'ghs_minted0token0value000000000',
      expiresAt: '2026-11-27T10:00:00.000Z',
    });
    expect(requests.at(-1)).toMatchObject({ url: '/app/installations/99/access_tokens', body: scope });

    const rotated = pem();
    writeFileSync(file, rotated);
    await expect(app(file).mint(scope)).rejects.toThrow(
      'GitHub refused an installation token for web (401): A JSON web token could not be decoded',
    );
    publicKey = rotated;
    await expect(app(file).mint(scope)).resolves.toMatchObject({ token: 'ghs_minted0token0value000000000' });
  });

  it("says GitHub's refusal and never the key; an answer without a token is an error", async () => {
    const file = join(dir, 'key2.pem');
    writeFileSync(file, publicKey);
    answer = { status: 422, body: { message: 'There is at least one repository that does not exist' } };
    const failure = await app(file)
      .mint({ repositories: ['other'], permissions: {} })
      .catch((e: Error) => e);
    expect(String(failure)).toBe(
      'Error: GitHub refused an installation token for other (422): ' +
        'There is at least one repository that does not exist',
    );
    expect(String(failure)).not.toContain('PRIVATE KEY');
    answer = { status: 201, body: { token: 'x' } };
    await expect(app(file).mint({ permissions: {} })).rejects.toThrow(
      'GitHub answered an installation token request without token and expires_at',
    );
  });
});

describe("the relay's token", () => {
  it("asks for the runner's permissions and statuses: read (merge weighs commit statuses)", () => {
    expect(RELAY_PERMISSIONS).toEqual({ contents: 'write', pull_requests: 'write', checks: 'read', statuses: 'read' });
  });
});

describe('a runner Pod with a GitHub App', () => {
  const config = unitConfig({
    runnerNamespace: 'runners',
    startTimeoutMs: 7_200_000,
    defaultRunTimeoutMs: 7_200_000,
    githubApp: {
      appId: '7',
      installationId: '99',
      privateKeyFile: '/etc/app-key/private-key.pem',
      apiUrl: 'http://127.0.0.1:9',
      relaySecret: undefined,
    },
  });
  const fakeApp = () => {
    const scopes: TokenScope[] = [];
    let minted = 0;
    const app: GitHubApp = {
      mint: async (scope) => {
        scopes.push(scope);
        minted++;
        return { token: `ghs_token${minted}`, expiresAt: new Date(clock + 3_600_000).toISOString() };
      },
    };
    return { app, scopes, count: () => minted };
  };
  let clock = NOW;

  it('gets a token for its one repository in a Secret it owns, renewed when 20 minutes are left', async () => {
    clock = NOW;
    const session = testSession({ name: 'a' });
    const github = fakeApp();
    const world = fakeWorld(config, () => new Date(clock), [session], [], github.app);
    const first = await world.pass('tether/a');
    const podKey = `runners/${runnerName('a')}`;
    const pod = world.cluster.pods.get(podKey)!;
    const secret = world.cluster.secrets.get(`${podKey}-github`)!;
    expect(github.scopes).toEqual([
      { repositories: ['web'], permissions: { contents: 'write', pull_requests: 'write', checks: 'read' } },
    ]);
    expect(Buffer.from(secret.data!.token!, 'base64').toString()).toBe('ghs_token1');
    expect(secret.metadata!.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Pod', name: runnerName('a'), uid: pod.metadata!.uid },
    ]);
    expect(pod.metadata!.annotations![ANNOTATION_TOKEN_EXPIRES]).toBe(new Date(NOW + 3_600_000).toISOString());
    expect(first.requeueAfterMs).toBeLessThanOrEqual(3_600_000 - RENEW_BEFORE_MS);

    world.sync();
    clock = NOW + 3_600_000 - RENEW_BEFORE_MS - 1000;
    const early = await world.pass('tether/a');
    expect(github.count()).toBe(1);
    expect(early.requeueAfterMs).toBe(1000);

    clock += 1000;
    await world.pass('tether/a');
    expect(github.count()).toBe(2);
    const renewed = world.cluster.secrets.get(`${podKey}-github`)!;
    expect(Buffer.from(renewed.data!.token!, 'base64').toString()).toBe('ghs_token2');
  });

  it('mounts the token into the runner container only, as a file; no personal token in the Pod', () => {
    const pod = desiredPod(testSession({ name: 'b' }), config);
    const [agent] = pod.spec!.initContainers!;
    const [runner] = pod.spec!.containers;
    expect(pod.spec!.volumes).toContainEqual({
      name: 'github-token',
      secret: { secretName: `${runnerName('b')}-github`, defaultMode: 0o440 },
    });
    expect(runner!.volumeMounts).toContainEqual({
      name: 'github-token',
      mountPath: '/var/run/secrets/tether/github',
      readOnly: true,
    });
    expect(runner!.env).toContainEqual({ name: 'GITHUB_TOKEN_FILE', value: '/var/run/secrets/tether/github/token' });
    expect(runner!.env!.map((e) => e.name)).not.toContain('GITHUB_TOKEN');
    expect(JSON.stringify(agent)).not.toMatch(/github|GITHUB/);
    expect(JSON.stringify(pod)).not.toContain('app-key');
  });

  it('without an App, the Pod has no token Secret and the pass mints nothing', async () => {
    const plain = unitConfig({ runnerNamespace: 'runners' });
    expect(JSON.stringify(desiredPod(testSession({ name: 'c' }), plain))).not.toContain('github-token');
    const world = fakeWorld(plain, () => new Date(NOW), [testSession({ name: 'c' })]);
    await world.pass('tether/c');
    expect(world.calls.filter((c) => /Secret|annotate/.test(c))).toEqual([]);
  });
});
