// A guard for tests that run the real Claude Code: an HTTP(S) proxy on loopback that refuses
// everything and records what was tried. Given as HTTPS_PROXY/HTTP_PROXY, it catches any call
// Claude Code makes past the scripted model (telemetry, update checks, the real API).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RefusingProxy {
  url: string;
  /** `CONNECT host:port` or `METHOD url`, in order. */
  attempts: string[];
  env: { HTTPS_PROXY: string; HTTP_PROXY: string };
  close(): Promise<void>;
}

export async function startRefusingProxy(): Promise<RefusingProxy> {
  const attempts: string[] = [];
  const server = createServer((req, res) => {
    attempts.push(`${req.method} ${req.url}`);
    res.writeHead(403, { 'content-type': 'text/plain' });
    res.end('refused by the test guard');
  });
  server.on('connect', (req, socket) => {
    attempts.push(`CONNECT ${req.url}`);
    socket.on('error', () => undefined);
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    attempts,
    env: { HTTPS_PROXY: url, HTTP_PROXY: url },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
