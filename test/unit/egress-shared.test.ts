// The egress definitions every component shares: allowlist entries and the callers' credentials.
import { describe, expect, it } from 'vitest';
import {
  agentPassword,
  parseUsername,
  proxyUrlWith,
  samePassword,
  supervisorPassword,
  usernameOf,
} from '../../common/egress/credentials.ts';
import { canonicalHost, entryMatches, grantEntry, parseHostEntry } from '../../common/egress/hosts.ts';

const KEY = 'k'.repeat(40);

describe('host entries', () => {
  it.each([
    ['pypi.org', 'pypi.org', 443, true],
    ['pypi.org', 'pypi.org', 80, true],
    ['pypi.org', 'pypi.org', 22, false],
    ['pypi.org', 'evil-pypi.org', 443, false],
    ['pypi.org', 'files.pypi.org', 443, false],
    ['*.pythonhosted.org', 'files.pythonhosted.org', 443, true],
    ['*.pythonhosted.org', 'pythonhosted.org', 443, false],
    ['*.pythonhosted.org', 'xpythonhosted.org', 443, false],
    ['127.0.0.1:4873', '127.0.0.1', 4873, true],
    ['127.0.0.1:4873', '127.0.0.1', 443, false],
    ['[::1]:8080', '::1', 8080, true],
    ['PyPI.org', 'pypi.org', 443, true],
  ])('%s covers %s:%i: %s', (entry, host, port, expected) => {
    expect(entryMatches(parseHostEntry(entry), host, port)).toBe(expected);
  });

  it.each([
    '',
    '*',
    '*.',
    'pypi.org:0',
    'pypi.org:70000',
    'http://pypi.org',
    'pypi.org/simple',
    'a b',
    '*.*.org',
    '::1',
  ])('refuses %j', (entry) => expect(() => parseHostEntry(entry)).toThrow(/host entry|port/));

  it('canonical hosts: lower case, brackets and a final dot dropped, junk refused', () => {
    expect(canonicalHost('PyPI.ORG.')).toBe('pypi.org');
    expect(canonicalHost('[::1]')).toBe('::1');
    expect(canonicalHost('a/b')).toBeUndefined();
    expect(canonicalHost('')).toBeUndefined();
    expect(canonicalHost('x'.repeat(254))).toBeUndefined();
  });

  it('a grant names exactly the destination asked about', () => {
    expect(grantEntry('pypi.org', 443)).toBe('pypi.org:443');
    expect(grantEntry('::1', 8080)).toBe('[::1]:8080');
    expect(entryMatches(parseHostEntry(grantEntry('::1', 8080)), '::1', 8080)).toBe(true);
  });
});

describe('egress credentials', () => {
  it("derives the supervisor's per Pod (its uid too) and the agent's per Session from it", () => {
    const pod1 = supervisorPassword(KEY, 'tether-runners', 's1-runner', 'uid-1');
    expect(pod1).not.toBe(supervisorPassword(KEY, 'tether-runners', 's2-runner', 'uid-1'));
    expect(pod1).not.toBe(supervisorPassword(KEY, 'tether-runners', 's1-runner', 'uid-2'));
    expect(pod1).not.toBe(supervisorPassword(KEY, 'other', 's1-runner', 'uid-1'));
    expect(pod1).not.toBe(supervisorPassword('j'.repeat(40), 'tether-runners', 's1-runner', 'uid-1'));
    expect(agentPassword(pod1, 's1')).not.toBe(agentPassword(pod1, 's2'));
    expect(agentPassword(pod1, 's1')).not.toBe(pod1);
    expect(() => supervisorPassword('short', 'ns', 'p', 'uid-1')).toThrow(/at least 32/);
    expect(() => supervisorPassword(KEY, 'ns', 'p', '')).toThrow(/no uid/);
  });

  it('user names round-trip, and anything else is nobody', () => {
    for (const caller of [
      { kind: 'supervisor', pod: 's1-runner-1' },
      { kind: 'agent', session: 'cmd-2e60' },
    ] as const)
      expect(parseUsername(usernameOf(caller))).toEqual(caller);
    for (const user of ['', 'runner.', 'agent.', 'root', 'agent.A', 'agent.a/b', 'runner.-x', 'agent.a b'])
      expect(parseUsername(user)).toBeUndefined();
  });

  it('compares passwords whole', () => {
    expect(samePassword('abc', 'abc')).toBe(true);
    expect(samePassword('abc', 'abd')).toBe(false);
    expect(samePassword('ab', 'abc')).toBe(false);
  });

  it('puts the credential into a proxy URL, encoded', () => {
    const url = proxyUrlWith('http://tether-egress.tether:3128', { kind: 'agent', session: 's1' }, 'a/b+c=');
    expect(url).toBe('http://agent.s1:a%2Fb%2Bc%3D@tether-egress.tether:3128');
    expect(decodeURIComponent(new URL(url).password)).toBe('a/b+c=');
  });
});
