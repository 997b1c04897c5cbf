// The proxy's server (egress/app.ts) against hostile clients, with a faked narrow Sessions view and a
// fixed resolver; the destination is a loopback listener. Credentials of another Pod, of a finished
// Session or of junk; malformed targets; smuggling shapes; pushes hidden from the path check; names
// resolving into blocked ranges; bounds on heads, connections, waiting and idle tunnels; and no
// credential in any log line.
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentPassword, supervisorPassword } from '../../common/egress/credentials.ts';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { createLogger, makeRedactor } from '../../common/log.ts';
import { createApp } from '../../egress/app.ts';
import { Asks } from '../../egress/asks.ts';
import type { SessionView } from '../../egress/callers.ts';
import { DEFAULT_BLOCKED_CIDRS, parseCidrs } from '../../egress/cidrs.ts';
import { loadConfig } from '../../egress/config.ts';
import { createMetrics } from '../../egress/metrics.ts';
import { eventually } from '../support/eventually.ts';
import {
  basic,
  podUid,
  runnerPods,
  connectThrough,
  destination,
  openEvents,
  overTunnel,
  postAnswer,
  proxyGet,
  rawRequest,
} from './egress-client.ts';

const KEY = 'egress-unit-key-'.padEnd(48, 'x');
const RUNNERS = 'runners';
const pw = (pod: string) => supervisorPassword(KEY, RUNNERS, pod, podUid(pod));
const agent = (session: string, pod: string) => basic(`agent.${session}`, agentPassword(pw(pod), session));
const supervisor = (pod: string) => basic(`runner.${pod}`, pw(pod));

const views = new Map<string, SessionView>();
const handlers: Array<(name: string, view: SessionView | undefined) => void> = [];
const setSession = (name: string, view: SessionView | undefined) => {
  if (view) views.set(name, view);
  else views.delete(name);
  for (const h of handlers) h(name, view);
};
const logged: string[] = [];
let server: Server;
let port: number;
let dest: Awaited<ReturnType<typeof destination>>;
/** The forge, on the other loopback address: every port of forge.test's address is the forge's. */
let forge: Awaited<ReturnType<typeof destination>>;
const RESOLVE: Record<string, string[]> = {};

beforeAll(async () => {
  dest = await destination();
  forge = await destination('::1');
  Object.assign(RESOLVE, {
    'dest.test': ['127.0.0.1'],
    'x.inside.test': ['10.0.0.7'],
    'x.loopy.test': ['127.0.0.2'],
  });
  const blocked = DEFAULT_BLOCKED_CIDRS.filter((c) => c !== '127.0.0.0/8');
  const sink = new Writable({ write: (chunk, _e, done) => (logged.push(String(chunk)), done()) });
  const logger = createLogger({ component: 'egress', level: 'debug', redact: makeRedactor([KEY]), destination: sink });
  const metrics = createMetrics();
  const asks = new Asks({
    askWaitMs: 60_000,
    maxWaitingPerSession: 2,
    maxAsksPerSession: 4,
    persistRepositoryGrant: () => undefined,
    counted: () => undefined,
  });
  server = createApp({
    config: {
      key: KEY,
      runnerNamespace: RUNNERS,
      rules: {
        forgeHosts: [{ host: 'forge.test' }],
        allow: [
          parseHostEntry(`dest.test:${dest.port}`),
          parseHostEntry(`127.0.0.1:${dest.port}`),
          parseHostEntry('*.inside.test:443'),
          parseHostEntry(`*.loopy.test:${dest.port}`),
        ],
        deny: [],
        supervisorAllow: [parseHostEntry(`dest.test:${dest.port}`)],
        repositories: new Map(),
        blocked: parseCidrs([...blocked, '127.0.0.2/32'].join(',')),
        ask: true,
      },
      limits: {
        askWaitMs: 60_000,
        maxConnections: 40,
        maxConnectionsPerSession: 30,
        maxConnectionsPerSupervisor: 30,
        maxUnauthenticated: 30,
        unauthenticatedMs: 2000,
        maxWaitingPerSession: 2,
        maxAsksPerSession: 4,
        forgeCacheMs: 1000,
        idleMs: 400,
        headerMs: 500,
        maxHeaderBytes: 4096,
        grantEntriesPerRepository: 10,
      },
    },
    sessions: { get: (n) => views.get(n), onChange: (h) => handlers.push(h) },
    pods: runnerPods(),
    grants: { entriesFor: () => [], add: async () => undefined },
    asks,
    metrics,
    logger,
    resolve: async (host) => RESOLVE[host] ?? [],
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  RESOLVE['forge.test'] = ['::1'];
  setSession('s1', { phase: 'Working', podName: 'pod-a', repoUrl: 'https://forge.test/acme/web.git' });
  setSession('s2', { phase: 'Working', podName: 'pod-b' });
  setSession('done', { phase: 'Succeeded', podName: 'pod-a' });
  setSession('orphan', { phase: 'Working', podName: 'pod-gone' });
});
afterAll(() => {
  server?.closeAllConnections();
  server?.close();
  dest?.server.close();
  forge?.server.close();
});

const target = () => `dest.test:${dest.port}`;

describe('credentials', () => {
  it('answers 407 with a Basic challenge without one', async () => {
    const { reply } = await connectThrough(port, target());
    expect(reply.status).toBe(407);
    expect(reply.headers['proxy-authenticate']).toBe('Basic realm="tether-egress"');
  });

  it('lets a live Session’s agent through', async () => {
    const { reply, socket } = await connectThrough(port, target(), agent('s1', 'pod-a'));
    expect(reply.status).toBe(200);
    expect((await overTunnel(socket, '/hello')).body).toBe('reached /hello');
  });

  it.each([
    ['junk', 'Basic !!!!'],
    ['another scheme', 'Bearer abc'],
    ['no password', `Basic ${Buffer.from('agent.s1').toString('base64')}`],
    ['a wrong password', basic('agent.s1', 'guess')],
    ["another Pod's credential", agent('s1', 'pod-b')],
    ["another Session's password", basic('agent.s1', agentPassword(pw('pod-a'), 's2'))],
    ['a finished Session', agent('done', 'pod-a')],
    ['an unknown Session', agent('nobody', 'pod-a')],
    ['an unknown user kind', basic('admin.s1', 'x')],
    ['the supervisor of a Pod that is gone', supervisor('pod-gone')],
    ['the supervisor of a Pod that has ended', supervisor('pod-done')],
    [
      'the supervisor of an earlier Pod of the same name',
      basic('runner.pod-a', supervisorPassword(KEY, RUNNERS, 'pod-a', 'uid-old')),
    ],
    ['the agent of a Session whose Pod is gone', agent('orphan', 'pod-gone')],
    ['a very long header', `Basic ${'A'.repeat(3000)}`],
  ])('refuses %s with 407', async (_name, auth) => {
    expect((await connectThrough(port, target(), auth)).reply.status).toBe(407);
  });

  it("refuses a supervisor's stream of another Pod's Session", async () => {
    const events = await openEvents(port, 's2', supervisor('pod-a'));
    expect(events.status).toBe(403);
    expect((await openEvents(port, 's1', basic('runner.pod-a', 'wrong'))).status).toBe(401);
    expect((await openEvents(port, 's1', agent('s1', 'pod-a'))).status).toBe(401);
  });
});

describe('the supervisor API', () => {
  it('answers 404 to a path that names no Session, 400 to a bad answer, 404 to an ask not open', async () => {
    for (const path of ['/v1/sessions/%zz/events', '/v1/sessions/S1/events', '/v1/sessions//answers'])
      expect((await rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).status).toBe(404);
    for (const body of ['{', '{"id": "x", "grant": "forever"}', '[]', 'x'.repeat(2000)])
      expect(await postAnswer(port, 's1', supervisor('pod-a'), body)).toBe(400);
    expect(await postAnswer(port, 's1', supervisor('pod-a'), { id: 'nope', grant: 'once' })).toBe(404);
    expect(await postAnswer(port, 's2', supervisor('pod-a'), { id: 'nope', grant: 'once' })).toBe(403);
  });
});

describe('malformed requests', () => {
  it.each(['host', 'host:', '[::1', 'a b:80', 'user@dest.test:80', `${'a'.repeat(300)}:80`, 'dest.test:99999'])(
    'answers 400 with the reason to CONNECT %j',
    async (text) => {
      const { reply } = await connectThrough(port, text, agent('s1', 'pod-a'));
      expect(reply.status).toBe(400);
      expect(reply.headers['proxy-status']).toMatch(/^tether-egress; error=http_request_error; details="/);
      expect(reply.body.length).toBeGreaterThan(5);
    },
  );

  it('answers 400 to both Content-Length and Transfer-Encoding, and nothing reaches the destination', async () => {
    const before = dest.heads.length;
    const reply = await rawRequest(
      port,
      `POST http://${target()}/x HTTP/1.1\r\nHost: ${target()}\r\nProxy-Authorization: ${agent('s1', 'pod-a')}\r\n` +
        'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n',
    );
    expect(reply.status).toBe(400);
    expect(dest.heads.length).toBe(before);
  });

  it('answers 400 to a head larger than the bound', async () => {
    const reply = await rawRequest(port, `GET http://${target()}/ HTTP/1.1\r\nX-Big: ${'y'.repeat(8000)}\r\n\r\n`);
    expect(reply.status).toBe(400);
  });

  it('closes a connection that never finishes its head', async () => {
    const reply = await rawRequest(port, `CONNECT ${target()} HTTP/1.1\r\nHost: x\r\n`);
    expect(reply.status === 0 || reply.status >= 400).toBe(true);
  });

  it('refuses https in absolute form and a user in the URL', async () => {
    expect((await proxyGet(port, `https://${target()}/`, agent('s1', 'pod-a'))).status).toBe(400);
    expect((await proxyGet(port, `http://u:p@${target()}/`, agent('s1', 'pod-a'))).status).toBe(400);
  });
});

describe('destinations', () => {
  it('refuses a name below a wildcard entry that resolves into a blocked range, naming it', async () => {
    const { reply } = await connectThrough(port, 'x.inside.test:443', agent('s1', 'pod-a'));
    expect(reply.status).toBe(403);
    expect(reply.body).toContain('10.0.0.7');
    expect((await connectThrough(port, `x.loopy.test:${dest.port}`, agent('s1', 'pod-a'))).reply.status).toBe(403);
  });

  it.each([
    ['GET', '/acme/web.git/info/refs?service=git-receive-pack'],
    ['GET', '/acme/web.git/info/refs?service=GIT-RECEIVE-PACK'],
    ['POST', '/acme/web.git/git-%72eceive-pack'],
    ['POST', '/acme/web.git//git-receive-pack'],
    ['POST', '/acme/web.git/git-upload-pack/%2e%2e/git-receive-pack'],
  ])('refuses a push to the forge: %s %s, which never reaches it', async (method, path) => {
    const before = forge.heads.length;
    const reply = await proxyGet(port, `http://forge.test:${forge.port}${path}`, agent('s1', 'pod-a'), method);
    expect(reply.status).toBe(403);
    expect(reply.body).toContain('no route to push');
    expect(forge.heads.length).toBe(before);
  });

  it('reads the forge over plain HTTP, without the credential or hop-by-hop headers', async () => {
    const reply = await proxyGet(
      port,
      `http://forge.test:${forge.port}/acme/web.git/info/refs?service=git-upload-pack`,
      agent('s1', 'pod-a'),
      'GET',
      'Connection: X-Secret\r\nX-Secret: 1\r\nX-Kept: 2\r\nProxy-Connection: keep-alive\r\n',
    );
    expect(reply.status).toBe(200);
    const head = forge.heads.at(-1)!.toLowerCase();
    expect(head).toContain('x-kept: 2');
    expect(head).not.toMatch(/proxy-authorization|x-secret|proxy-connection/);
  });

  it('refuses a tunnel to the forge', async () => {
    const { reply } = await connectThrough(port, `forge.test:${forge.port}`, agent('s1', 'pod-a'));
    expect(reply.status).toBe(403);
    expect(reply.body).toContain('no route to push');
  });
});

describe('bounds', () => {
  it('closes an idle tunnel', async () => {
    const { reply, socket } = await connectThrough(port, target(), agent('s1', 'pod-a'));
    expect(reply.status).toBe(200);
    await new Promise((r) => socket.once('close', r));
  });

  it('refuses a third waiting connection of a Session; a closed stream refuses the waiting at once', async () => {
    const events = await openEvents(port, 's1', supervisor('pod-a'));
    RESOLVE['a.test'] = ['203.0.113.1'];
    RESOLVE['b.test'] = ['203.0.113.2'];
    RESOLVE['c.test'] = ['203.0.113.3'];
    const waiting = [
      connectThrough(port, 'a.test:443', agent('s1', 'pod-a')),
      connectThrough(port, 'b.test:443', agent('s1', 'pod-a')),
    ];
    await events.next('ask');
    await events.next('ask', events.events.findIndex((e) => e.type === 'ask') + 1);
    const third = await connectThrough(port, 'c.test:443', agent('s1', 'pod-a'));
    expect(third.reply.status).toBe(403);
    expect(third.reply.body).toContain('too many connections');
    events.close();
    for (const w of await Promise.all(waiting)) {
      expect(w.reply.status).toBe(403);
      expect(w.reply.body).toContain('could not be asked');
    }
  });

  it('cuts a tunnel when its Session ends', async () => {
    setSession('s3', { phase: 'Working', podName: 'pod-c' });
    const { reply, socket } = await connectThrough(port, `127.0.0.1:${dest.port}`, agent('s3', 'pod-c'));
    expect(reply.status).toBe(200);
    const closed = new Promise((r) => socket.once('close', r));
    setSession('s3', { phase: 'Cancelled', podName: 'pod-c' });
    await closed;
    expect((await connectThrough(port, target(), agent('s3', 'pod-c'))).reply.status).toBe(407);
  });
});

describe('logs', () => {
  it('never carry a password, a Basic header or the key', () => {
    const text = logged.join('');
    expect(text).toContain('"connection"');
    for (const secret of [KEY, pw('pod-a'), agentPassword(pw('pod-a'), 's1'), agent('s1', 'pod-a').slice(6)])
      expect(text).not.toContain(secret);
  });
});

/** A second server with the configuration an environment gives (the Sessions view shared). */
async function serverFrom(env: Record<string, string>): Promise<{ server: Server; port: number }> {
  const configured = createApp({
    config: loadConfig({ TETHER_EGRESS_KEY: KEY, TETHER_RUNNER_NAMESPACE: RUNNERS, ...env }),
    sessions: { get: (n) => views.get(n), onChange: () => undefined },
    pods: runnerPods(),
    grants: { entriesFor: () => [], add: async () => undefined },
    asks: new Asks({
      askWaitMs: 1000,
      maxWaitingPerSession: 1,
      maxAsksPerSession: 1,
      persistRepositoryGrant: () => undefined,
      counted: () => undefined,
    }),
    metrics: createMetrics(),
    logger: createLogger({ component: 'egress', level: 'silent' }),
    resolve: async (host) => RESOLVE[host] ?? [],
  });
  await new Promise<void>((r) => configured.listen(0, '127.0.0.1', r));
  return { server: configured, port: (configured.address() as { port: number }).port };
}

describe('the default configuration', () => {
  it('closes loopback: an address, and a name that resolves to it', async () => {
    RESOLVE['localhost'] = ['127.0.0.1', '::1'];
    const { server: defaults, port: defaultPort } = await serverFrom({ TETHER_EGRESS_ALLOW: 'dest.test' });
    // Neither is listed: each would be asked about, but its address is known without a lookup and checked first.
    const events = await openEvents(defaultPort, 's1', supervisor('pod-a'));
    try {
      const { reply } = await connectThrough(defaultPort, `127.0.0.1:${dest.port}`, agent('s1', 'pod-a'));
      expect(reply.status).toBe(403);
      expect(reply.body).toContain('in a range this install keeps closed');
      const named = await connectThrough(defaultPort, `localhost:${dest.port}`, agent('s1', 'pod-a'));
      expect(named.reply.status).toBe(403);
      expect(named.reply.body).toContain('resolves to 127.0.0.1, in a range this install keeps closed');
      expect(events.events.filter((e) => e.type === 'ask')).toEqual([]);
    } finally {
      events.close();
      defaults.closeAllConnections();
      defaults.close();
    }
  });
});

describe('the cap on open connections', () => {
  it('closes a connection past TETHER_EGRESS_MAX_CONNECTIONS without reading it', async () => {
    const { server: capped, port: cappedPort } = await serverFrom({
      TETHER_EGRESS_MAX_CONNECTIONS: '2',
      TETHER_EGRESS_MAX_SESSION_CONNECTIONS: '1',
      TETHER_EGRESS_MAX_SUPERVISOR_CONNECTIONS: '1',
      TETHER_EGRESS_MAX_UNAUTHENTICATED: '1',
      TETHER_EGRESS_ALLOW: `127.0.0.1:${dest.port}`,
    });
    const tunnel = await connectThrough(cappedPort, `127.0.0.1:${dest.port}`, agent('s1', 'pod-a'));
    expect(tunnel.reply.status).toBe(200);
    const held = [connect(cappedPort, '127.0.0.1'), tunnel.socket];
    try {
      await eventually(async () => {
        const count = await new Promise<number>((r) => capped.getConnections((_e, n) => r(n)));
        expect(count).toBe(2);
      });
      const third = await rawRequest(cappedPort, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(third.status).toBe(0);
      held[0]!.destroy();
      await eventually(async () =>
        expect(
          (await rawRequest(cappedPort, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).status,
        ).toBe(200),
      );
    } finally {
      for (const socket of held) socket.destroy();
      capped.closeAllConnections();
      capped.close();
    }
  });
});

describe('request bodies', () => {
  it('carries a chunked and a sized body to the destination whole (git fetch over plain HTTP)', async () => {
    const echo = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += String(d)));
      req.on('end', () => res.end(`got ${req.method} ${req.url} ${body}`));
    });
    await new Promise<void>((r) => echo.listen(0, '::1', r));
    const echoPort = (echo.address() as { port: number }).port;
    const url = `http://forge.test:${echoPort}/acme/web.git/git-upload-pack`;
    const head = `POST ${url} HTTP/1.1\r\nHost: forge.test\r\nProxy-Authorization: ${agent('s1', 'pod-a')}\r\n`;
    try {
      const chunked = await rawRequest(
        port,
        `${head}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n`,
      );
      expect(chunked.body).toBe('got POST /acme/web.git/git-upload-pack hello world');
      const sized = await rawRequest(port, `${head}Content-Length: 4\r\nConnection: close\r\n\r\nwant`);
      expect(sized.body).toBe('got POST /acme/web.git/git-upload-pack want');
    } finally {
      echo.close();
    }
  });
});
