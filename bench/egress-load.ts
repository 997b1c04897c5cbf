// The egress benchmark's parts: one small request timed direct, through the proxy as plain HTTP and
// through a CONNECT tunnel (a fresh connection each, as a package manager's first request makes), and
// tunnels held open to count the proxy's memory.
import { request } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';

const BODY = 'ok';

/** A loopback destination: answers every request with a small body; holds raw connections open. */
export async function smallServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    let head = '';
    socket.on('data', (d) => {
      head += String(d);
      if (!head.includes('\r\n\r\n')) return;
      if (head.startsWith('HOLD')) return;
      head = '';
      socket.end(`HTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\nConnection: close\r\n\r\n${BODY}`);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port };
}

/** One GET and its whole answer, in microseconds. */
export function timedGet(options: { port: number; path: string; headers?: Record<string, string> }): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', agent: false, ...options }, (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 200 ? resolve((performance.now() - start) * 1000) : reject(new Error(`${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** CONNECT through the proxy; resolves with the open tunnel. */
export function openTunnel(proxyPort: number, target: string, auth: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyPort, '127.0.0.1');
    let head = '';
    const onData = (d: Buffer) => {
      head += String(d);
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (head.startsWith('HTTP/1.1 200')) resolve(socket);
      else reject(new Error(head.split('\r\n')[0]));
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${auth}\r\n\r\n`);
  });
}

/** CONNECT, then the same GET over the tunnel, in microseconds. */
export async function timedTunnelGet(proxyPort: number, target: string, auth: string): Promise<number> {
  const start = performance.now();
  const socket = await openTunnel(proxyPort, target, auth);
  return new Promise((resolve, reject) => {
    let answer = '';
    socket.on('data', (d) => (answer += String(d)));
    socket.on('close', () =>
      answer.startsWith('HTTP/1.1 200') ? resolve((performance.now() - start) * 1000) : reject(new Error(answer)),
    );
    socket.write(`GET / HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`);
  });
}

/** The same GET as a tunnel's, written on a raw socket straight to the destination, in microseconds. */
export function timedRawGet(port: number): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => (answer += String(d)));
    socket.on('error', reject);
    socket.on('close', () =>
      answer.startsWith('HTTP/1.1 200') ? resolve((performance.now() - start) * 1000) : reject(new Error(answer)),
    );
    socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
  });
}

/** n sequential samples of one measurement, after `warm` unrecorded ones. */
export async function samples(n: number, warm: number, one: () => Promise<number>): Promise<number[]> {
  for (let i = 0; i < warm; i++) await one();
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await one());
  return out;
}

/** A process's resident memory in MiB (Linux). */
export async function residentMiB(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+([0-9]+) kB/.exec(status)?.[1] ?? NaN);
  return Math.round((kib / 1024) * 10) / 10;
}
