// A git forge over smart HTTP on loopback: `git http-backend` as CGI behind a server that wants a
// token as GitHub does (Basic x-access-token:<token>) and records every request it gets.
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GitRequest { method: string; path: string; authorization?: string }

export interface GitHttpForge {
  /** http://127.0.0.1:<port> */
  origin: string;
  requests: GitRequest[];
  close(): Promise<void>;
}

export const basicAuth = (token: string) => `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;

/** Serves the bare repositories under projectRoot; without the token every request gets 401. */
export async function serveGitOverHttp(projectRoot: string, token: string): Promise<GitHttpForge> {
  const requests: GitRequest[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    requests.push({ method: req.method ?? '', path: url.pathname, authorization: req.headers.authorization });
    if (req.headers.authorization !== basicAuth(token)) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="forge"' });
      res.end();
      return;
    }
    backend(projectRoot, url, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function backend(projectRoot: string, url: URL, req: IncomingMessage, res: ServerResponse): void {
  const header = (name: string) => String(req.headers[name] ?? '');
  const cgi = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_PROJECT_ROOT: projectRoot, GIT_HTTP_EXPORT_ALL: '1', REMOTE_USER: 'x-access-token', REMOTE_ADDR: '127.0.0.1',
      PATH_INFO: url.pathname, QUERY_STRING: url.search.slice(1), REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: header('content-type'), HTTP_CONTENT_ENCODING: header('content-encoding'), HTTP_GIT_PROTOCOL: header('git-protocol'),
      ...(req.headers['content-length'] ? { CONTENT_LENGTH: header('content-length') } : {}),
    },
  });
  req.pipe(cgi.stdin);
  let head = Buffer.alloc(0);
  let started = false;
  cgi.stdout.on('data', (chunk: Buffer) => {
    if (started) return void res.write(chunk);
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    const headers: Record<string, string> = {};
    let status = 200;
    for (const line of head.subarray(0, end).toString().split('\r\n')) {
      const colon = line.indexOf(':');
      const [name, value] = [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    res.writeHead(status, headers);
    res.write(head.subarray(end + 4));
    started = true;
  });
  cgi.stdout.on('end', () => res.end());
}
