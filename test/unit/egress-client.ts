// A client of the egress proxy written for the tests, byte by byte where the point is what a hostile
// client sends: raw requests, CONNECT tunnels, and the supervisor's side of common/egress/protocol.ts
// (the events stream and the answers).
import { request } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { answersPath, eventsPath, type EgressEvent, type Grant } from '../../common/egress/protocol.ts';
import type { PodView, WatchedPods } from '../../egress/callers.ts';

/** The uid the tests' runner Pods have (their supervisor's password is derived with it). */
export const podUid = (pod: string) => `uid-${pod}`;
export interface FakePods extends WatchedPods {
  /** Changes one Pod's view (undefined: deleted) and tells the watchers. */
  set(name: string, view: PodView | undefined): void;
}

/** Every runner Pod exists and runs, with uid podUid(name); but `gone` (none), `done` (Succeeded) and those set. */
export function runnerPods(gone = 'pod-gone', done = 'pod-done'): FakePods {
  const set = new Map<string, PodView | undefined>();
  const handlers: Array<(name: string, view: PodView | undefined) => void> = [];
  const get = (name: string) =>
    set.has(name) ? set.get(name) : name === gone ? undefined : { uid: podUid(name), done: name === done };
  return {
    get,
    onChange: (handler) => void handlers.push(handler),
    set(name, view) {
      set.set(name, view);
      for (const handler of handlers) handler(name, view);
    },
  };
}
export const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function parseReply(raw: string): Reply {
  const end = raw.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = raw.slice(0, end < 0 ? raw.length : end).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body: end < 0 ? '' : raw.slice(end + 4) };
}

/** Sends the bytes, reads until the proxy closes; status 0 when it closed without a reply. */
export function rawRequest(port: number, text: string | Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    socket.on('data', (d) => (raw += String(d)));
    socket.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? undefined : reject(e)));
    socket.on('close', () => resolve(parseReply(raw)));
    socket.write(text);
  });
}

export interface Tunnel {
  reply: Reply;
  /** The open tunnel (status 200), or the closed socket. */
  socket: Socket;
}

/** CONNECT target with the given Proxy-Authorization; resolves at the reply's head (or the close). */
export function connectThrough(port: number, target: string, auth?: string): Promise<Tunnel> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    const onData = (d: Buffer) => {
      raw += String(d);
      if (raw.startsWith('HTTP/1.1 200') && raw.includes('\r\n\r\n')) {
        socket.off('data', onData);
        resolve({ reply: parseReply(raw), socket });
      }
    };
    socket.on('data', onData);
    socket.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? undefined : reject(e)));
    socket.on('close', () => resolve({ reply: parseReply(raw), socket }));
    socket.write(
      `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ''}\r\n`,
    );
  });
}

/** One plain HTTP request over an open tunnel; the reply once the server closes. */
export function overTunnel(socket: Socket, path = '/'): Promise<Reply> {
  return new Promise((resolve) => {
    let raw = '';
    socket.on('data', (d) => (raw += String(d)));
    socket.on('close', () => resolve(parseReply(raw)));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  });
}

/** A plain-HTTP proxy request (absolute form). */
export const proxyGet = (port: number, url: string, auth: string | undefined, method = 'GET', extra = '') =>
  rawRequest(
    port,
    `${method} ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ''}` +
      `${extra}Connection: close\r\nContent-Length: 0\r\n\r\n`,
  );

/** The supervisor's events stream of one Session: every event, and a wait for the next of a type. */
export interface EventsClient {
  status: number;
  events: EgressEvent[];
  next<T extends EgressEvent['type']>(type: T, after?: number): Promise<Extract<EgressEvent, { type: T }>>;
  closed: Promise<void>;
  close(): void;
}

export function openEvents(port: number, session: string, auth: string): Promise<EventsClient> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: eventsPath(session), headers: { Authorization: auth } });
    req.on('error', reject);
    req.on('response', (res) => {
      const events: EgressEvent[] = [];
      const waiters: Array<() => void> = [];
      let buffer = '';
      res.on('data', (d: Buffer) => {
        if (res.statusCode !== 200) return;
        buffer += String(d);
        const lines = buffer.split('\n');
        buffer = lines.pop()!;
        for (const line of lines.filter(Boolean)) events.push(JSON.parse(line) as EgressEvent);
        for (const w of waiters.splice(0)) w();
      });
      const closed = new Promise<void>((done) => res.on('close', () => done()));
      const next = <T extends EgressEvent['type']>(type: T, after = 0) =>
        new Promise<Extract<EgressEvent, { type: T }>>((found) => {
          const look = () => {
            const hit = events.slice(after).find((e) => e.type === type);
            if (hit) found(hit as Extract<EgressEvent, { type: T }>);
            else waiters.push(look);
          };
          look();
        });
      resolve({ status: res.statusCode ?? 0, events, next, closed, close: () => req.destroy() });
    });
    req.end();
  });
}

export function postAnswer(port: number, session: string, auth: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', path: answersPath(session), headers: { Authorization: auth } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
}

export const answer = (port: number, session: string, auth: string, id: string, grant: Grant) =>
  postAnswer(port, session, auth, { id, grant });

/** A loopback HTTP listener as the destination: answers `reached <path>` and records each request head. */
export async function destination(host = '127.0.0.1'): Promise<{ server: Server; port: number; heads: string[] }> {
  const heads: string[] = [];
  const server = createServer((socket) => {
    let raw = '';
    socket.on('data', (d) => {
      raw += String(d);
      if (!raw.includes('\r\n\r\n')) return;
      heads.push(raw.slice(0, raw.indexOf('\r\n\r\n')));
      const path = raw.split(' ')[1] ?? '';
      const body = `reached ${path}`;
      socket.end(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return { server, port: (server.address() as { port: number }).port, heads };
}
