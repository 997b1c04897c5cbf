// The proxy's decision (egress/decide.ts) as a table: the rule order of docs/egress.md, deny before
// allow, blocked ranges on the resolved addresses unless the install listed the destination, the forge
// read-only over plain HTTP, the supervisor's own list, and the phone asked only when it can be.
import { describe, expect, it } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { DEFAULT_BLOCKED_CIDRS, parseCidrs } from '../../egress/cidrs.ts';
import { decide, NO_GRANTS, type DecisionInput, type ForgeAddress, type SessionGrants } from '../../egress/decide.ts';
import { parseAbsoluteUrl, parseConnectTarget, type Parsed, type Target } from '../../egress/target.ts';

const entries = (...list: string[]) => list.map(parseHostEntry);
const rules = {
  deny: entries('evil.example', '*.bad.example', '203.0.113.66:443'),
  forgeHosts: [{ host: 'github.com' }, { host: '127.0.0.1', port: 3000 }],
  blocked: parseCidrs(DEFAULT_BLOCKED_CIDRS.join(',')),
  allow: entries('pypi.org', '*.pythonhosted.org', 'internal.example:8443'),
  supervisorAllow: entries('api.github.com', 'model.example:443', '*.githubusercontent.com'),
  ask: true,
};
const none: SessionGrants = { ...NO_GRANTS, streamOpen: true };
const PUBLIC = ['203.0.113.7'];
const connect = (t: string) => parseConnectTarget(t);
const get = (url: string, method = 'GET') => parseAbsoluteUrl(method, url);

interface Row {
  name: string;
  target: Parsed;
  caller?: 'agent' | 'supervisor';
  addresses?: string[];
  forgeAddresses?: ForgeAddress[];
  grants?: Partial<SessionGrants>;
  ask?: boolean;
  expected: string;
}

const table: Row[] = [
  { name: 'malformed', target: connect('a b:80'), expected: 'malformed' },
  { name: 'listed', target: connect('pypi.org:443'), expected: 'allowed install' },
  { name: 'listed name, other port', target: connect('pypi.org:8080'), expected: 'ask' },
  { name: 'wildcard below', target: connect('files.pythonhosted.org:443'), expected: 'allowed install' },
  { name: 'wildcard is not the name itself', target: connect('pythonhosted.org:443'), expected: 'ask' },
  { name: 'deny', target: connect('evil.example:443'), expected: 'refused denied by this install' },
  {
    name: 'deny before a grant',
    target: connect('evil.example:443'),
    grants: { session: entries('evil.example') },
    expected: 'refused denied by this install',
  },
  { name: 'deny wildcard', target: connect('x.bad.example:443'), expected: 'refused denied by this install' },
  { name: 'forge CONNECT', target: connect('github.com:443'), expected: 'refused tunnel to the forge' },
  {
    name: 'forge read',
    target: get('http://github.com/acme/web.git/info/refs?service=git-upload-pack'),
    expected: 'allowed forge-read',
  },
  {
    name: 'forge fetch',
    target: get('http://github.com/acme/web.git/git-upload-pack', 'POST'),
    expected: 'allowed forge-read',
  },
  {
    name: 'forge push refs',
    target: get('http://github.com/a/w.git/info/refs?service=git-receive-pack'),
    expected: 'refused no route to push',
  },
  {
    name: 'forge push',
    target: get('http://github.com/a/w.git/git-receive-pack', 'POST'),
    expected: 'refused no route to push',
  },
  {
    name: 'forge push upper',
    target: get('http://github.com/a/w.git/GIT-RECEIVE-PACK', 'POST'),
    expected: 'refused no route to push',
  },
  {
    name: 'forge push encoded',
    target: get('http://github.com/a/w.git/git-%72eceive-pack', 'POST'),
    expected: 'refused no route to push',
  },
  {
    name: 'forge push twice encoded',
    target: get('http://github.com/a/w.git/git-%2572eceive-pack'),
    expected: 'refused no route to push',
  },
  {
    name: 'forge push //',
    target: get('http://github.com/a/w.git//git-receive-pack', 'POST'),
    expected: 'refused no route to push',
  },
  { name: 'forge PUT', target: get('http://github.com/a/w.git/x', 'PUT'), expected: 'refused no route to push' },
  {
    name: 'forge POST elsewhere',
    target: get('http://github.com/a/w.git/upload', 'POST'),
    expected: 'refused no route to push',
  },
  {
    name: 'forge port',
    target: connect('127.0.0.1:3000'),
    addresses: ['127.0.0.1'],
    expected: 'refused tunnel to the forge',
  },
  {
    name: 'forge GET with a body',
    target: { ...(get('http://github.com/a/w.git/info/refs') as Target), body: true },
    expected: 'refused a GET with a body',
  },
  {
    name: 'below the forge: api.github.com written to',
    target: get('http://api.github.com/repos/a/w/contents/x', 'PUT'),
    grants: { session: entries('api.github.com:80') },
    expected: 'refused no route to push',
  },
  { name: 'below the forge: a tunnel', target: connect('ssh.github.com:443'), expected: 'refused tunnel to the forge' },
  { name: 'not below: a lookalike', target: connect('notgithub.com:443'), expected: 'ask' },
  {
    name: "the forge's address, written as such",
    target: connect('140.82.112.3:443'),
    addresses: ['140.82.112.3'],
    forgeAddresses: [{ address: '140.82.112.3' }],
    expected: 'refused tunnel to the forge',
  },
  {
    name: "another name for the forge's address, read",
    target: get('http://mirror.example/a/w.git/info/refs'),
    addresses: ['140.82.112.3'],
    forgeAddresses: [{ address: '140.82.112.3' }],
    grants: { session: entries('mirror.example:80') },
    expected: 'allowed forge-read',
  },
  {
    name: "the forge's address, another port",
    target: connect('localhost:3001'),
    addresses: ['127.0.0.1'],
    forgeAddresses: [{ address: '127.0.0.1', port: 3000 }],
    expected: 'refused 127.0.0.1',
  },
  {
    name: 'the phone denied a listed host',
    target: connect('pypi.org:443'),
    grants: { denied: true },
    expected: 'refused denied from the phone',
  },
  {
    name: 'blocked under a wildcard of the install',
    target: connect('x.pythonhosted.org:443'),
    addresses: ['10.9.9.9'],
    expected: 'refused 10.9.9.9',
  },
  { name: 'unresolved', target: connect('nowhere.example:443'), addresses: [], expected: 'refused does not resolve' },
  {
    name: 'resolves into 10/8',
    target: connect('sneaky.example:443'),
    addresses: ['10.1.2.3'],
    expected: 'refused 10.1.2.3',
  },
  {
    name: 'one address of several blocked',
    target: connect('sneaky.example:443'),
    addresses: ['203.0.113.9', '169.254.169.254'],
    expected: 'refused 169.254.169.254',
  },
  {
    name: 'v4-mapped loopback',
    target: connect('[::ffff:127.0.0.1]:80'),
    addresses: ['::ffff:127.0.0.1'],
    expected: 'refused ::ffff:127.0.0.1',
  },
  { name: 'loopback v6', target: connect('[::1]:80'), addresses: ['::1'], expected: 'refused ::1' },
  {
    name: 'blocked even with a phone grant',
    target: connect('sneaky.example:443'),
    addresses: ['192.168.1.1'],
    grants: { session: entries('sneaky.example:443'), once: true },
    expected: 'refused 192.168.1.1',
  },
  {
    name: 'resolves to an address the install denies at that port',
    target: connect('pypi.org:443'),
    addresses: ['203.0.113.1', '203.0.113.66'],
    expected: 'refused resolves to 203.0.113.66, denied by this install',
  },
  {
    name: 'an address the install denies, spelled as v4-mapped v6',
    target: connect('[::ffff:cb00:7142]:443'),
    addresses: ['::ffff:cb00:7142'],
    expected: 'refused resolves to ::ffff:cb00:7142, denied by this install',
  },
  {
    name: 'an address the install denies, at another port',
    target: connect('pypi.org:80'),
    addresses: ['203.0.113.66'],
    expected: 'allowed install',
  },
  {
    name: 'the supervisor to an address the install denies',
    caller: 'supervisor',
    target: connect('api.github.com:443'),
    addresses: ['203.0.113.66'],
    expected: 'refused denied by this install',
  },
  {
    name: 'install-listed internal',
    target: connect('internal.example:8443'),
    addresses: ['10.0.0.5'],
    expected: 'allowed install',
  },
  {
    name: "repository's additions",
    target: connect('registry.npmjs.org:443'),
    grants: { additions: entries('registry.npmjs.org') },
    expected: 'allowed repository-list',
  },
  {
    name: 'repository grant',
    target: connect('a.example:443'),
    grants: { repository: entries('a.example:443') },
    expected: 'allowed repository',
  },
  {
    name: 'session grant',
    target: connect('a.example:443'),
    grants: { session: entries('a.example:443') },
    expected: 'allowed session',
  },
  { name: 'once', target: connect('a.example:443'), grants: { once: true }, expected: 'allowed once' },
  {
    name: 'denied from the phone',
    target: connect('a.example:443'),
    grants: { denied: true },
    expected: 'refused denied from the phone',
  },
  { name: 'asking off', target: connect('a.example:443'), ask: false, expected: 'refused asking the phone is off' },
  {
    name: 'no stream',
    target: connect('a.example:443'),
    grants: { streamOpen: false },
    expected: 'refused could not be asked',
  },
  {
    name: 'supervisor listed',
    caller: 'supervisor',
    target: connect('api.github.com:443'),
    expected: 'allowed supervisor',
  },
  {
    name: 'supervisor to the forge host unlisted',
    caller: 'supervisor',
    target: connect('github.com:443'),
    expected: "refused supervisor's list",
  },
  {
    name: 'supervisor never asks',
    caller: 'supervisor',
    target: connect('a.example:443'),
    expected: "refused supervisor's list",
  },
  {
    name: 'supervisor deny first',
    caller: 'supervisor',
    target: connect('evil.example:443'),
    expected: 'refused denied by this install',
  },
  {
    name: 'supervisor blocked under a wildcard',
    caller: 'supervisor',
    target: connect('raw.githubusercontent.com:443'),
    addresses: ['127.0.0.1'],
    expected: 'refused 127.0.0.1',
  },
  {
    name: 'supervisor listed on loopback',
    caller: 'supervisor',
    target: connect('model.example:443'),
    addresses: ['127.0.0.1'],
    expected: 'allowed supervisor',
  },
];

function run(row: Row): string {
  const input: DecisionInput = {
    caller: row.caller ?? 'agent',
    target: row.target,
    addresses: row.addresses ?? PUBLIC,
    rules: { ...rules, ask: row.ask ?? true },
    grants: { ...none, ...row.grants },
    ...(row.forgeAddresses ? { forgeAddresses: row.forgeAddresses } : {}),
  };
  const d = decide(input);
  if (d.verdict === 'allowed') return `allowed ${d.by} @${d.address}`;
  if (d.verdict === 'ask') return `ask @${d.address}`;
  return `${d.verdict} ${d.reason}`;
}

describe('the decision', () => {
  it.each(table)('$name → $expected', (row) => {
    const [verdict, ...words] = row.expected.split(' ');
    const got = run(row);
    expect(got.startsWith(verdict!)).toBe(true);
    expect(got).toContain(words.join(' '));
  });

  it('connects to the address it checked, the first resolved one', () => {
    expect(
      run({ name: '', target: connect('pypi.org:443'), addresses: ['203.0.113.1', '203.0.113.2'], expected: '' }),
    ).toBe('allowed install @203.0.113.1');
  });

  it('asks with the checked address kept', () => {
    expect(run({ name: '', target: connect('a.example:443'), expected: '' })).toBe('ask @203.0.113.7');
  });
});
