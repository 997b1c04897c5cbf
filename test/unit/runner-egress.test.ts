// The supervisor's side of egress, piece by piece: its configuration, Claude Code's environment
// per Session, the supervisor's own git, GitHub API and model calls through the proxy with its
// credential (a recording proxy on loopback, real git, Node's own http stack), the status.egress
// fold and the grant a decision becomes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { agentPassword } from '../../common/egress/credentials.ts';
import type { ConnectionEvent } from '../../common/egress/protocol.ts';
import { makeRedactor } from '../../common/log.ts';
import { LIMITS, type Decision } from '../../common/session/schema.ts';
import { parseConfig, sessionAgentEnv } from '../../runner-image/config.ts';
import { supervisorProxyUrl } from '../../runner-image/egress/env.ts';
import { proxyAgents } from '../../runner-image/egress/http.ts';
import { grantOf } from '../../runner-image/egress/link.ts';
import { foldEgress } from '../../runner-image/egress/records.ts';
import { githubCall } from '../../runner-image/forge/github.ts';
import { spawnGit } from '../../runner-image/git/spawn.ts';
import { startModelProxy } from '../../runner-image/model/proxy.ts';
import { ModelSpend } from '../../runner-image/model/spend.ts';

const TOKEN = 'supervisor-password-0123456789abcdef';
const SESSION = 'abc-20261122083000-k3x9';
const POD = 'abc-20261122083000-k3x9-runner';
const base = { TETHER_SESSION_NAME: SESSION, TETHER_SESSION_NAMESPACE: 'tether' };
/** The Pod's egress Secret as the kubelet mounts it: one file per key. */
const secretDir = mkdtempSync(join(tmpdir(), 'egress-secret-'));
const tokenFile = (name: string, content: string) => {
  writeFileSync(join(secretDir, name), content, { mode: 0o440 });
  return join(secretDir, name);
};
const TOKEN_FILE = tokenFile('token', TOKEN);
const egressEnv = { TETHER_EGRESS_URL: 'http://tether-egress.tether.svc:3128', TETHER_EGRESS_TOKEN_FILE: TOKEN_FILE };
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** A proxy on loopback that answers every request itself (JSON) and records it with its credential. */
let proxy: { url: string; seen: Array<{ line: string; auth?: string }>; close(): Promise<void> };
beforeAll(async () => {
  const seen: Array<{ line: string; auth?: string }> = [];
  const record = (req: IncomingMessage) =>
    seen.push({ line: `${req.method} ${req.url}`, auth: req.headers['proxy-authorization'] });
  const server = createServer((req, res) => {
    record(req);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"via":"proxy"}');
  });
  server.on('connect', (req, socket) => {
    record(req);
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
});
afterAll(async () => {
  await proxy.close();
  rmSync(secretDir, { recursive: true, force: true });
});
beforeEach(() => void proxy.seen.splice(0));

const egressConfig = () => parseConfig({ ...base, ...egressEnv, TETHER_POD_NAME: POD, TETHER_EGRESS_URL: proxy.url });

describe('runner egress configuration', () => {
  it('takes TETHER_EGRESS_URL and TETHER_EGRESS_TOKEN_FILE together, with the Pod name; reads the password \
once at start (a trailing newline aside); it is a secret', () => {
    const c = parseConfig({ ...base, ...egressEnv, TETHER_POD_NAME: POD });
    expect(c.egress).toEqual({ url: 'http://tether-egress.tether.svc:3128', token: TOKEN, pod: POD });
    expect(c.secrets).toContain(TOKEN);
    const withNewline = parseConfig({
      ...base,
      ...egressEnv,
      TETHER_EGRESS_TOKEN_FILE: tokenFile('nl', `${TOKEN}\n`),
      TETHER_POD_NAME: POD,
    });
    expect(withNewline.egress!.token).toBe(TOKEN);
    expect(parseConfig(base).egress).toBeUndefined();
  });

  it.each([
    [{ TETHER_EGRESS_URL: egressEnv.TETHER_EGRESS_URL, TETHER_POD_NAME: POD }, 'TETHER_EGRESS_TOKEN_FILE'],
    [
      { TETHER_EGRESS_URL: egressEnv.TETHER_EGRESS_URL, TETHER_EGRESS_TOKEN: TOKEN, TETHER_POD_NAME: POD },
      'TETHER_EGRESS_TOKEN_FILE',
    ],
    [{ TETHER_EGRESS_TOKEN_FILE: TOKEN_FILE, TETHER_POD_NAME: POD }, 'TETHER_EGRESS_URL'],
    [egressEnv, 'TETHER_POD_NAME'],
    [{ ...egressEnv, TETHER_POD_NAME: POD, TETHER_EGRESS_URL: 'http://user:pw@egress:3128' }, 'TETHER_EGRESS_URL'],
    [
      { ...egressEnv, TETHER_POD_NAME: POD, TETHER_EGRESS_TOKEN_FILE: tokenFile('short', 'short') },
      'TETHER_EGRESS_TOKEN_FILE',
    ],
    [
      { ...egressEnv, TETHER_POD_NAME: POD, TETHER_EGRESS_TOKEN_FILE: tokenFile('two', `${TOKEN}\n${TOKEN}`) },
      'TETHER_EGRESS_TOKEN_FILE',
    ],
    [
      { ...egressEnv, TETHER_POD_NAME: POD, TETHER_EGRESS_TOKEN_FILE: join(secretDir, 'absent') },
      'TETHER_EGRESS_TOKEN_FILE',
    ],
    [{ ...egressEnv, TETHER_POD_NAME: POD, TETHER_EGRESS_TOKEN_FILE: 'token' }, 'TETHER_EGRESS_TOKEN_FILE'],
    [{ TETHER_MODEL_PORT: '70000' }, 'TETHER_MODEL_PORT'],
  ])('refuses %j naming %s', (change, variable) => {
    expect(() => parseConfig({ ...base, ...change })).toThrow(new RegExp(`^${variable}: `));
  });

  it('TETHER_MODEL_PORT: the port the model endpoint binds (0: any)', async () => {
    expect(parseConfig(base).modelPort).toBe(0);
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const { port } = free.address() as AddressInfo;
    await new Promise((resolve) => free.close(resolve));
    const c = parseConfig({ ...base, TETHER_MODEL_PORT: String(port) });
    const model = await startModelProxy({
      upstream: 'http://127.0.0.1:9',
      apiKey: 'sk-ant-k',
      log: pino({ level: 'silent' }),
      spend: new ModelSpend(),
      port: c.modelPort,
    });
    expect(model.url).toBe(`http://127.0.0.1:${port}`);
    await model.close();
  });
});

describe("Claude Code's environment with egress", () => {
  it("is its Session's proxy credential and loopback past it, never the operator's proxy or the token", () => {
    const c = parseConfig({
      ...base,
      ...egressEnv,
      TETHER_POD_NAME: POD,
      HTTPS_PROXY: 'http://operator-proxy:3128',
      HTTP_PROXY: 'http://operator-proxy:3128',
      NO_PROXY: '.corp',
      GITHUB_TOKEN: 'ghp_never',
    });
    const env = sessionAgentEnv(c, 'other-session', 'http://127.0.0.1:4100');
    const password = agentPassword(TOKEN, 'other-session');
    const agentUrl = `http://agent.other-session:${password}@tether-egress.tether.svc:3128`;
    // What it gets without any proxy (runner-config), the model endpoint, and its own proxy: nothing else.
    expect(env).toEqual({
      ...parseConfig(base).agentEnv,
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:4100',
      ANTHROPIC_API_KEY: 'scripted-model',
      HTTP_PROXY: agentUrl,
      HTTPS_PROXY: agentUrl,
      http_proxy: agentUrl,
      https_proxy: agentUrl,
      NO_PROXY: '127.0.0.1,localhost,::1',
      no_proxy: '127.0.0.1,localhost,::1',
    });
    expect(JSON.stringify(env)).not.toContain(TOKEN);
    // Each Session its own password.
    expect(sessionAgentEnv(c, SESSION, undefined).HTTPS_PROXY).not.toBe(env.HTTPS_PROXY);
  });

  it('without egress is as before: the operator proxy, loopback past it', () => {
    const c = parseConfig({ ...base, HTTPS_PROXY: 'http://operator-proxy:3128' });
    expect(sessionAgentEnv(c, SESSION, undefined)).toMatchObject({
      HTTPS_PROXY: 'http://operator-proxy:3128',
      NO_PROXY: '127.0.0.1,localhost',
    });
    expect(sessionAgentEnv(c, SESSION, undefined)).not.toHaveProperty('https_proxy');
  });
});

describe("the supervisor's own traffic through the egress proxy", () => {
  it('git: every request, loopback included, with runner.<pod> sent at once', async () => {
    const c = egressConfig();
    expect(c.gitProxy).toMatchObject({ http_proxy: supervisorProxyUrl(c.egress!), no_proxy: '' });
    const store = mkdtempSync(join(tmpdir(), 'egress-git-'));
    const git = spawnGit(['ls-remote', 'http://127.0.0.1:9/acme/web.git'], {
      gitDir: null,
      path: process.env.PATH!,
      storeDir: store,
      author: c.gitAuthor,
      redact: makeRedactor(c.secrets),
      proxy: c.gitProxy,
    });
    const failed = await git.done.then(
      () => '',
      (error: Error) => error.message,
    );
    rmSync(store, { recursive: true, force: true });
    expect(failed).not.toContain(TOKEN);
    expect(proxy.seen[0]).toEqual({
      line: 'GET http://127.0.0.1:9/acme/web.git/info/refs?service=git-upload-pack',
      auth: basic(`runner.${POD}`, TOKEN),
    });
    expect(proxy.seen.every((r) => r.auth === basic(`runner.${POD}`, TOKEN))).toBe(true);
  });

  it("GitHub's API: absolute-form http, CONNECT for https, with the credential", async () => {
    const agents = proxyAgents(supervisorProxyUrl(egressConfig().egress!));
    const github = { apiUrl: 'http://127.0.0.1:9', token: () => 'ghs_x', proxy: agents };
    await expect(githubCall(github, (s) => s, 'a read', { method: 'GET', path: 'repos/a/b' })).resolves.toEqual({
      via: 'proxy',
    });
    const secure = { ...github, apiUrl: 'https://api.github.example' };
    await expect(githubCall(secure, (s) => s, 'a read', { method: 'GET', path: 'repos/a/b' })).rejects.toThrow();
    expect(proxy.seen).toEqual([
      { line: 'GET http://127.0.0.1:9/repos/a/b', auth: basic(`runner.${POD}`, TOKEN) },
      { line: 'CONNECT api.github.example:443', auth: basic(`runner.${POD}`, TOKEN) },
    ]);
  });

  it("the model proxy's upstream", async () => {
    const agents = proxyAgents(supervisorProxyUrl(egressConfig().egress!));
    const model = await startModelProxy({
      upstream: 'http://127.0.0.1:9/gateway',
      apiKey: 'sk-ant-real',
      log: pino({ level: 'silent' }),
      spend: new ModelSpend(),
      egress: agents,
    });
    const res = await fetch(`${model.url}/v1/messages`, { method: 'POST', body: '{}' });
    expect(await res.json()).toEqual({ via: 'proxy' });
    await model.close();
    expect(proxy.seen).toEqual([
      { line: 'POST http://127.0.0.1:9/gateway/v1/messages', auth: basic(`runner.${POD}`, TOKEN) },
    ]);
  });
});

const event = (over: Partial<ConnectionEvent>): ConnectionEvent => ({
  type: 'connection',
  caller: 'agent',
  host: 'pypi.org',
  port: 443,
  allowed: true,
  bytes: 10,
  at: '2026-11-27T09:00:00.000Z',
  ...over,
});

describe('status.egress', () => {
  it('one record per caller+host+port: counts and bytes summed, the latest refusal kept', () => {
    let records = foldEgress([], event({}));
    records = foldEgress(records, event({ bytes: 5, at: '2026-11-27T09:00:01.000Z' }));
    records = foldEgress(records, event({ caller: 'supervisor' }));
    records = foldEgress(records, event({ allowed: false, bytes: 99, reason: 'first', at: '2026-11-27T09:00:02Z' }));
    records = foldEgress(records, event({ allowed: false, bytes: 0, reason: 'latest' }));
    records = foldEgress(records, event({ port: 80 }));
    expect(records).toEqual([
      {
        caller: 'supervisor',
        host: 'pypi.org',
        port: 443,
        allowed: 1,
        refused: 0,
        bytes: 10,
        lastAt: '2026-11-27T09:00:00.000Z',
      },
      {
        caller: 'agent',
        host: 'pypi.org',
        port: 443,
        allowed: 2,
        refused: 2,
        bytes: 15,
        lastAt: '2026-11-27T09:00:00.000Z',
        reason: 'latest',
      },
      {
        caller: 'agent',
        host: 'pypi.org',
        port: 80,
        allowed: 1,
        refused: 0,
        bytes: 10,
        lastAt: '2026-11-27T09:00:00.000Z',
      },
    ]);
  });

  it('keeps the most recent records only, and ignores what the schema could not hold', () => {
    let records = foldEgress([], event({ host: 'first.example' }));
    for (let i = 0; i < LIMITS.egressRecords; i++) records = foldEgress(records, event({ host: `h${i}.example` }));
    expect(records).toHaveLength(LIMITS.egressRecords);
    expect(records.map((r) => r.host)).not.toContain('first.example');
    for (const bad of [
      { host: 'UPPER.example' },
      { host: 'a b' },
      { port: 0 },
      { port: 1.5 },
      { bytes: -1 },
      { at: 'yesterday' },
      { caller: 'root' as 'agent' },
    ])
      expect(foldEgress(records, event(bad))).toEqual(records);
    const long = foldEgress([], event({ allowed: false, reason: 'x'.repeat(500) }));
    expect(long[0]!.reason!.length).toBeLessThanOrEqual(200);
  });
});

describe('the grant a decision becomes', () => {
  const decision = (d: Partial<Decision>): Decision => ({ requestId: 'egress-1', action: 'allow', at: '', ...d });
  it.each([
    [{}, 'once'],
    [{ scope: 'once' }, 'once'],
    [{ scope: 'session' }, 'session'],
    [{ scope: 'repository' }, 'repository'],
    [{ action: 'deny' }, 'deny'],
    [{ action: 'deny', scope: 'repository' }, 'deny'],
    [{ action: 'reject' }, 'deny'],
  ] as const)('%j → %s', (d, grant) => expect(grantOf(decision(d as Partial<Decision>))).toBe(grant));
});
