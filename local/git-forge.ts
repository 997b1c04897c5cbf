// A git forge over smart HTTP on loopback: `git http-backend` as CGI behind a server that wants a
// token as GitHub does (Basic x-access-token:<token>). The local stack's remote is served this way:
// runners push with their token like to any forge, and the repositories' files stay their owner's
// (an agent's process on the same machine can neither open them nor, without the token, push).
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { hostEnv } from './config.ts';

export interface GitRequest {
  method: string;
  path: string;
  authorization?: string;
}

export interface GitHttpForge {
  /** http://127.0.0.1:<port> */
  origin: string;
  /** Every request so far (only when asked to record them). */
  requests: GitRequest[];
  close(): Promise<void>;
}

export interface ForgeOptions {
  /** Keep every request in `requests` (tests). */
  record?: boolean;
  /** Serve only these repositories (URL paths such as /acme/sample.git); all under the root when absent. */
  repositories?: string[];
  /**
   * Who else may fetch or push: asked for a request without the forge's own token, with the Basic password
   * (x-access-token:<token>), the repository's URL path and whether it is a push (the GitHub stand-in's tokens).
   */
  authorize?(access: ForgeAccess): boolean;
  /** Called once a push to the repository (its URL path) has been taken, with the token it came with. */
  onPushed?(repository: string, token?: string): void;
}

export interface ForgeAccess {
  repository: string;
  write: boolean;
  token?: string;
}

export const basicAuth = (token: string) => `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;

/**
 * The folder under projectRoot that a request's path names and this forge serves ('' for projectRoot itself);
 * undefined: not served.
 */
function servedFolder(path: string, repositories: string[] | undefined): string | undefined {
  if (!repositories) return '';
  return repositories.find((repo) => path === repo || path.startsWith(`${repo}/`));
}

/**
 * Serves the bare repositories under projectRoot; without the token every request gets 401.
 * http-backend runs as the owner of the repository asked for (of projectRoot when every
 * repository under it is served): git refuses a repository another user owns.
 */
export async function serveGitOverHttp(
  projectRoot: string,
  token: string,
  options: ForgeOptions = {},
): Promise<GitHttpForge> {
  const requests: GitRequest[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (options.record)
      requests.push({ method: req.method ?? '', path: url.pathname, authorization: req.headers.authorization });
    const folder = servedFolder(url.pathname, options.repositories);
    const refusal = refused(req, url, token, options);
    if (refusal || folder === undefined) {
      res.writeHead(refusal ?? 404, refusal === 401 ? { 'www-authenticate': 'Basic realm="forge"' } : {});
      res.end();
      return;
    }
    const pushed = isPush(url) && req.method === 'POST' ? options.onPushed : undefined;
    const pusher = passwordOf(req.headers.authorization);
    backend(projectRoot, ownerOf(join(projectRoot, folder)), url, req, res, () =>
      pushed?.(repositoryPath(url), pusher),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const isPush = (url: URL) =>
  url.pathname.endsWith('/git-receive-pack') || url.searchParams.get('service') === 'git-receive-pack';

/** The repository part of a request's path: /owner/name.git of /owner/name.git/info/refs. */
const repositoryPath = (url: URL) => /^(.*?\.git)(?:\/|$)/.exec(url.pathname)?.[1] ?? url.pathname;

/** 401 without a token the forge takes, 403 with one it does not take here; undefined: go ahead. */
function refused(req: IncomingMessage, url: URL, token: string, options: ForgeOptions): 401 | 403 | undefined {
  const authorization = req.headers.authorization;
  if (authorization === basicAuth(token)) return undefined;
  const password = passwordOf(authorization);
  if (!options.authorize || password === undefined) return 401;
  return options.authorize({ repository: repositoryPath(url), write: isPush(url), token: password }) ? undefined : 403;
}

function passwordOf(authorization: string | undefined): string | undefined {
  const encoded = /^Basic\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (!encoded) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  return decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : undefined;
}

/** The owner of `path`, to run as (only root can, and only root needs to: it may serve another user's folder). */
export function ownerOf(path: string): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const { uid, gid } = statSync(path);
  return uid === 0 ? {} : { uid, gid };
}

function backend(
  projectRoot: string,
  owner: { uid?: number; gid?: number },
  url: URL,
  req: IncomingMessage,
  res: ServerResponse,
  onDone: () => void,
): void {
  const header = (name: string) => String(req.headers[name] ?? '');
  const cgi = spawn('git', ['http-backend'], {
    ...owner,
    env: {
      PATH: hostEnv().PATH,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_PROJECT_ROOT: projectRoot,
      GIT_HTTP_EXPORT_ALL: '1',
      REMOTE_USER: 'x-access-token',
      REMOTE_ADDR: '127.0.0.1',
      PATH_INFO: url.pathname,
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: header('content-type'),
      HTTP_CONTENT_ENCODING: header('content-encoding'),
      HTTP_GIT_PROTOCOL: header('git-protocol'),
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
  // Ended once git has exited: a client that saw its push answered finds the push hook already called.
  cgi.on('close', (code) => {
    if (code === 0) onDone();
    res.end();
  });
}
