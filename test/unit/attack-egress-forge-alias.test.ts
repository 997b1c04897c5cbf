// Attack: the forge by another name. The forge rule (no tunnel, no push over plain HTTP) matches the
// host text of TETHER_REPO_HOSTS exactly, so the same server named otherwise — `localhost` or an
// IPv4-mapped address for a forge on 127.0.0.1 (the local stack, where loopback is not blocked), a
// name below the forge (`ssh.github.com:443` carries git over ssh) — is an ordinary host: the phone is
// asked in words that do not say "the forge", and once it allows, the agent tunnels to the forge or
// posts git-receive-pack to it.
import { describe, expect, it } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { DEFAULT_BLOCKED_CIDRS, parseCidrs } from '../../egress/cidrs.ts';
import { decide, NO_GRANTS, type Decision, type DecisionRules, type SessionGrants } from '../../egress/decide.ts';
import { parseAbsoluteUrl, parseConnectTarget, type Parsed } from '../../egress/target.ts';

const base = {
  deny: [],
  allow: [],
  supervisorAllow: [],
  repositories: new Map(),
  ask: true,
};
/** The local stack's ranges: loopback, where all of it listens, is not blocked there. */
const LOCAL_BLOCKED_CIDRS = DEFAULT_BLOCKED_CIDRS.filter((cidr) => !['127.0.0.0/8', '::1/128'].includes(cidr));
const local = {
  ...base,
  forgeHosts: [{ host: '127.0.0.1', port: 3000 }],
  blocked: parseCidrs(LOCAL_BLOCKED_CIDRS.join(',')),
};
const cluster = { ...base, forgeHosts: [{ host: 'github.com' }], blocked: parseCidrs(DEFAULT_BLOCKED_CIDRS.join(',')) };
const grants = (extra: Partial<SessionGrants> = {}): SessionGrants => ({ ...NO_GRANTS, streamOpen: true, ...extra });

const agentDecides = (rules: DecisionRules, target: Parsed, addresses: string[], g = grants()): Decision =>
  decide({ caller: 'agent', target, addresses, rules, grants: g });

describe('the forge named otherwise is still the forge', () => {
  it.each([
    ['localhost:3000', ['127.0.0.1']],
    ['[::ffff:127.0.0.1]:3000', ['::ffff:127.0.0.1']],
  ])('local stack: a tunnel to %s (the forge 127.0.0.1:3000) is refused, not asked about', (target, addresses) => {
    const made = agentDecides(local, parseConnectTarget(target), addresses);
    expect(made).toMatchObject({ verdict: 'refused' });
    expect((made as { reason: string }).reason).toContain('no route to push');
  });

  it('local stack: after the phone allowed localhost:3000, a POST of git-receive-pack to it is still refused', () => {
    const push = parseAbsoluteUrl('POST', 'http://localhost:3000/acme/sample.git/git-receive-pack');
    const made = agentDecides(local, push, ['127.0.0.1'], grants({ session: [parseHostEntry('localhost:3000')] }));
    expect(made).toMatchObject({ verdict: 'refused' });
  });

  it('a cluster: ssh.github.com:443 (git over ssh to the forge) is refused like github.com, not asked about', () => {
    const made = agentDecides(cluster, parseConnectTarget('ssh.github.com:443'), ['203.0.113.9']);
    expect(made).toMatchObject({ verdict: 'refused' });
  });
});
