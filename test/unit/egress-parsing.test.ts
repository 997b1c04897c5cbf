// What the proxy reads from clients and from its environment: CONNECT targets and absolute URLs read
// strictly, address ranges, the grants ConfigMap's lines, and a configuration that refuses to start
// naming the bad variable (and never shows the key).
import { describe, expect, it } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { DEFAULT_BLOCKED_CIDRS, parseCidrs } from '../../egress/cidrs.ts';
import { loadConfig } from '../../egress/config.ts';
import { grantKey, parseGrantLines, withEntry } from '../../egress/grants.ts';
import { forgeWriteProblem, parseAbsoluteUrl, parseConnectTarget } from '../../egress/target.ts';

const KEY = 'k'.repeat(40);

describe('CONNECT targets', () => {
  it.each([
    ['pypi.org:443', 'pypi.org', 443],
    ['PyPI.org.:443', 'pypi.org', 443],
    ['[::1]:8080', '::1', 8080],
    ['127.0.0.1:1', '127.0.0.1', 1],
  ])('reads %s', (text, host, port) => {
    expect(parseConnectTarget(text)).toEqual({ kind: 'connect', method: 'CONNECT', host, port });
  });

  it.each([
    'host',
    'host:',
    'host:0',
    'host:65536',
    'host:+443',
    'host:0x1bb',
    '[::1',
    '[::1]',
    '::1:80',
    'a b:80',
    'user@host:443',
    'user:pw@host:443',
    'host/x:443',
    `${'a'.repeat(254)}:443`,
    `${'a.'.repeat(130)}com:443`,
    '2130706433:80',
    '127.1:80',
    '0x7f000001:80',
    '0X7F.0.0.1:80',
    'a.0x7f:80',
    'example.1:80',
    '017.0.0.1:80',
    '[zz::1]:80',
    '-host:443',
    ':443',
    '',
  ])('refuses %j', (text) => {
    expect(parseConnectTarget(text)).toHaveProperty('problem');
  });
});

describe('absolute URLs', () => {
  it('reads host, port, path and query', () => {
    expect(parseAbsoluteUrl('GET', 'http://Example.org:8080/a/b?c=d')).toEqual({
      kind: 'http',
      method: 'GET',
      host: 'example.org',
      port: 8080,
      path: '/a/b?c=d',
    });
    expect(parseAbsoluteUrl('GET', 'http://example.org')).toMatchObject({ port: 80, path: '/' });
  });

  it('resolves dot segments before the check, as the forwarded path', () => {
    expect(parseAbsoluteUrl('POST', 'http://g.example/a.git/git-upload-pack/../git-receive-pack')).toMatchObject({
      path: '/a.git/git-receive-pack',
    });
  });

  it.each([
    'https://example.org/',
    'ftp://example.org/',
    'http://u:p@example.org/',
    'http://u@example.org/',
    'http://[::1/',
  ])('refuses %j', (url) => expect(parseAbsoluteUrl('GET', url)).toHaveProperty('problem'));
});

describe('the forge, read-only', () => {
  it.each([
    ['GET', '/a.git/info/refs?service=git-upload-pack'],
    ['HEAD', '/a.git/HEAD'],
    ['POST', '/a.git/git-upload-pack'],
  ])('lets %s %s through', (method, path) => expect(forgeWriteProblem(method, path)).toBeUndefined());

  it.each([
    ['GET', '/a.git/info/refs?service=git-receive-pack'],
    ['GET', '/a.git/info/refs?service=git-Receive-Pack'],
    ['GET', '/a.git/info/refs?service=git-%72eceive-pack'],
    ['GET', '/a.git/info/refs?service=git%252Dreceive%252Dpack'],
    ['POST', '/a.git//git-receive-pack'],
    ['POST', '/a.git/git-upload-pack%2f..%2fgit-receive-pack'],
    ['POST', '/a.git/%2e%2e/upload'],
    ['POST', '/a.git\\git-receive-pack'],
    ['PUT', '/a.git/objects/x'],
    ['DELETE', '/a.git'],
    ['POST', '/a.git/git-upload-pack.x'],
  ])('refuses %s %s', (method, path) => expect(forgeWriteProblem(method, path)).toContain('no route to push'));
});

describe('address ranges', () => {
  const blocked = parseCidrs(DEFAULT_BLOCKED_CIDRS.join(','));
  it.each([
    '10.0.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '100.64.0.1',
    '127.0.0.53',
    '169.254.169.254',
    '0.0.0.0',
    '::1',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
  ])('blocks %s by default', (a) => expect(blocked.has(a)).toBe(true));
  it.each(['203.0.113.1', '172.32.0.1', '2001:db8::1', '8.8.8.8'])('lets %s through', (a) =>
    expect(blocked.has(a)).toBe(false),
  );
  it('takes `none` as the empty list', () => expect(parseCidrs('none').has('127.0.0.1')).toBe(false));
  it.each(['10.0.0.0/33', 'ten/8', '10.0.0.0/8/1', '::1/129', 'fc00::/x'])('refuses %j', (text) =>
    expect(() => parseCidrs(text)).toThrow(/not an address range/),
  );
});

describe('the grants ConfigMap', () => {
  it('keys a repository by a digest, a valid ConfigMap key', () => {
    const key = grantKey('https://github.com/acme/web.git');
    expect(key).toMatch(/^[-._a-zA-Z0-9]+$/);
    expect(key).not.toBe(grantKey('https://github.com/acme/api.git'));
  });
  it('adds an entry once, drops the oldest past the bound, skips junk lines', () => {
    let value = withEntry(undefined, parseHostEntry('a.example:443'), 2);
    value = withEntry(value, parseHostEntry('a.example:443'), 2);
    expect(value).toBe('a.example:443');
    value = withEntry(value, parseHostEntry('b.example:443'), 2);
    value = withEntry(value, parseHostEntry('[::1]:80'), 2);
    expect(value).toBe('b.example:443\n[::1]:80');
    expect(parseGrantLines(`${value}\nnot an entry!\n`).map((e) => e.host)).toEqual(['b.example', '::1']);
  });
});

describe('configuration', () => {
  const load = (env: Record<string, string>) => loadConfig({ TETHER_EGRESS_KEY: KEY, ...env });

  it('has the defaults the others rely on', () => {
    const config = load({ TETHER_NAMESPACE: 'ns' });
    expect(config).toMatchObject({ port: 3128, listen: '0.0.0.0', namespace: 'ns', runnerNamespace: 'ns' });
    expect(config.grantsConfigMap).toBe('tether-egress-grants');
    expect(config.limits.askWaitMs).toBe(60_000);
    expect(config.rules.ask).toBe(true);
    expect(config.rules.blocked.has('127.0.0.1')).toBe(true);
    expect(config.rules.forgeHosts).toEqual([{ host: 'github.com' }]);
  });

  it('reads the lists, the repositories and the runner namespace', () => {
    const config = load({
      TETHER_RUNNER_NAMESPACE: 'runners',
      TETHER_EGRESS_ALLOW: 'pypi.org, *.npmjs.org',
      TETHER_EGRESS_REPOSITORIES: '{"https://github.com/acme/web.git": ["cdn.example:443"]}',
      TETHER_EGRESS_BLOCKED_CIDRS: 'none',
      TETHER_REPO_HOSTS: 'github.com,127.0.0.1:3000,/srv/git',
      TETHER_EGRESS_ASK: 'false',
      TETHER_EGRESS_ASK_WAIT: '250ms',
    });
    expect(config.runnerNamespace).toBe('runners');
    expect(config.rules.allow.map((e) => e.host)).toEqual(['pypi.org', 'npmjs.org']);
    expect(config.rules.repositories.get('https://github.com/acme/web.git')).toEqual([
      parseHostEntry('cdn.example:443'),
    ]);
    expect(config.rules.blocked.has('127.0.0.1')).toBe(false);
    expect(config.rules.forgeHosts).toEqual([{ host: 'github.com' }, { host: '127.0.0.1', port: 3000 }]);
    expect(config.rules.ask).toBe(false);
    expect(config.limits.askWaitMs).toBe(250);
  });

  it.each([
    [{ TETHER_EGRESS_KEY: 'short' }, 'TETHER_EGRESS_KEY'],
    [{ TETHER_EGRESS_ALLOW: 'pypi.org,not a host' }, 'TETHER_EGRESS_ALLOW'],
    [{ TETHER_EGRESS_DENY: 'http://x' }, 'TETHER_EGRESS_DENY'],
    [{ TETHER_EGRESS_SUPERVISOR_ALLOW: 'a:99999' }, 'TETHER_EGRESS_SUPERVISOR_ALLOW'],
    [{ TETHER_EGRESS_REPOSITORIES: '["x"]' }, 'TETHER_EGRESS_REPOSITORIES'],
    [{ TETHER_EGRESS_REPOSITORIES: '{"u": "x"}' }, 'TETHER_EGRESS_REPOSITORIES'],
    [{ TETHER_EGRESS_REPOSITORIES: '{' }, 'TETHER_EGRESS_REPOSITORIES'],
    [{ TETHER_EGRESS_BLOCKED_CIDRS: '10.0.0.0/99' }, 'TETHER_EGRESS_BLOCKED_CIDRS'],
    [{ TETHER_EGRESS_ASK_WAIT: '0s' }, 'TETHER_EGRESS_ASK_WAIT'],
    [{ TETHER_EGRESS_ASK_WAIT: 'soon' }, 'TETHER_EGRESS_ASK_WAIT'],
    [{ TETHER_EGRESS_PORT: '70000' }, 'TETHER_EGRESS_PORT'],
    [{ TETHER_EGRESS_ASK: 'yes' }, 'TETHER_EGRESS_ASK'],
    [{ TETHER_REPO_HOSTS: 'http://github.com' }, 'TETHER_REPO_HOSTS'],
    [{ TETHER_EGRESS_GRANTS: 'Bad_Name' }, 'TETHER_EGRESS_GRANTS'],
  ])('refuses %j naming the variable', (env, variable) => {
    expect(() => load(env)).toThrow(new RegExp(`^${variable}`));
  });

  it('never shows the key in its error', () => {
    const key = 'secret-but-short';
    expect(() => loadConfig({ TETHER_EGRESS_KEY: key })).toThrow(/TETHER_EGRESS_KEY/);
    expect(() => loadConfig({ TETHER_EGRESS_KEY: key })).not.toThrow(new RegExp(key));
  });
});
