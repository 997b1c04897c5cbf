// Where a proxied request goes, read strictly from what the client sent: a CONNECT target
// (`host:port`, `[v6]:port`) or an absolute-form plain-HTTP URL. Anything else is malformed and gets a
// 400 naming the problem. And what the agent may do on a forge over plain HTTP: read, never push. Pure.
import { isIP } from 'node:net';
import { canonicalHost } from '../common/egress/hosts.ts';

export interface Target {
  kind: 'connect' | 'http';
  host: string;
  port: number;
  method: string;
  /** Plain HTTP: the path and query forwarded (as checked). */
  path?: string;
  /** Plain HTTP: the request carries a body (a Content-Length above 0, or a Transfer-Encoding). */
  body?: boolean;
}

export type Parsed = Target | { problem: string };

/** The longest CONNECT target: a 253-character name, `:`, five digits. */
const MAX_TARGET = 253 + 6;
const PORT = /^[0-9]{1,5}$/;

function hostPort(hostText: string, portText: string): { host: string; port: number } | { problem: string } {
  const port = PORT.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65535)) return { problem: `"${portText.slice(0, 8)}" is not a port (1-65535)` };
  const host = canonicalHost(hostText);
  if (!host) return { problem: 'the destination is not a host name or an address' };
  // A name ending in a number (decimal or 0x hex: `0x7f000001`, `a.0x7f`) is an IPv4 address to resolvers and
  // browsers (WHATWG URL); only the dotted-decimal form is taken.
  const last = host.includes(':') ? '' : (host.split('.').at(-1) ?? '');
  if ((/^[0-9.]+$/.test(host) || /^(0x[0-9a-f]*|[0-9]+)$/i.test(last)) && isIP(host) !== 4)
    return { problem: 'the destination is not a dotted IPv4 address' };
  if (host.includes(':') && isIP(host) !== 6) return { problem: 'the destination is not an IPv6 address' };
  return { host, port };
}

/** A CONNECT request's target: `host:port` or `[v6]:port`; no user, path, spaces or missing port. */
export function parseConnectTarget(text: string): Parsed {
  if (text.length > MAX_TARGET) return { problem: 'the destination is longer than a host name can be' };
  if (/[\s@/\\?#]/.test(text)) return { problem: 'a CONNECT target is host:port, nothing else' };
  const bracketed = /^\[([^\]]*)\]:([^:]*)$/.exec(text);
  const plain = /^([^:[\]]+):([^:]*)$/.exec(text);
  const parts = bracketed ?? plain;
  if (!parts) return { problem: 'a CONNECT target is host:port (an IPv6 address in brackets)' };
  const where = hostPort(parts[1]!, parts[2]!);
  return 'problem' in where ? where : { kind: 'connect', method: 'CONNECT', ...where };
}

/** An absolute-form request (`GET http://host:port/path`); https and credentials in the URL are refused. */
export function parseAbsoluteUrl(method: string, text: string): Parsed {
  if (!/^http:\/\//i.test(text))
    return { problem: /^https:/i.test(text) ? 'use CONNECT for https' : 'the request target is not http://…' };
  if (text.length > 8192) return { problem: 'the URL is too long' };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { problem: 'the URL cannot be read' };
  }
  if (url.username || url.password || /^http:\/\/[^/]*@/i.test(text)) return { problem: 'no user in the URL' };
  const where = hostPort(url.hostname, url.port || '80');
  if ('problem' in where) return where;
  return { kind: 'http', method, ...where, path: `${url.pathname}${url.search}` };
}

export interface ForgeHost {
  host: string;
  /** Undefined: every port of that host. */
  port?: number;
}

/** The host entries of TETHER_REPO_HOSTS (folders are not network destinations). */
export function parseForgeHosts(entries: readonly string[]): ForgeHost[] {
  return entries
    .filter((entry) => !entry.startsWith('/'))
    .map((entry) => {
      const [host = '', port] = entry.toLowerCase().split(':');
      return port === undefined ? { host } : { host, port: Number(port) };
    });
}

/** The forge itself or any name below it (`api.github.com`, `ssh.github.com` for `github.com`), on its port. */
export const isForge = (forges: readonly ForgeHost[], host: string, port: number): boolean =>
  forges.some(
    (f) =>
      (f.host === host || (!isIP(f.host) && host.endsWith(`.${f.host}`))) && (f.port === undefined || f.port === port),
  );

/** Exactly a forge host as the install named it (only then may it lie in a blocked range). */
export const isForgeExactly = (forges: readonly ForgeHost[], host: string, port: number): boolean =>
  forges.some((f) => f.host === host && (f.port === undefined || f.port === port));

/** The path as a server might read it: percent-decoded until stable, lower-case, `\` as `/`, `//` as one. */
function normalizedPath(path: string): string {
  let text = path;
  for (let i = 0; i < 4; i++) {
    let next: string;
    try {
      next = decodeURIComponent(text.replace(/\+/g, ' '));
    } catch {
      next = text;
    }
    if (next === text) break;
    text = next;
  }
  return text
    .toLowerCase()
    .replace(/\\/g, '/')
    .replace(/\/{2,}/g, '/');
}

/** Why the agent may not send this plain-HTTP request to a forge, or undefined for a read. */
export function forgeWriteProblem(method: string, path: string, body = false): string | undefined {
  const seen = normalizedPath(path);
  const [pathname = ''] = seen.split('?');
  const push = "the agent has no route to push; pushes go through Tether's review";
  if (seen.includes('receive-pack')) return push;
  if (pathname.split('/').includes('..')) return push;
  if (method === 'GET' || method === 'HEAD') return body ? `a ${method} with a body is not a read; ${push}` : undefined;
  if (method === 'POST' && pathname.endsWith('/git-upload-pack')) return undefined;
  return push;
}
