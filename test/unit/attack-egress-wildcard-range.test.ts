// Attack: a wildcard on the install's list turns off the blocked ranges for every name below it.
// "Unless the install itself listed the destination" is meant for an internal host the install
// names; but `*.amazonaws.com` (listed for S3) also covers `ec2-<a-b-c-d>.compute-1.amazonaws.com`,
// which inside an AWS VPC resolves to that instance's private address: the agent reaches the nodes
// (kubelet, NodePorts) without the phone, the name chosen by the agent, the address by AWS's DNS.
import { describe, expect, it } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { DEFAULT_BLOCKED_CIDRS, parseCidrs } from '../../egress/cidrs.ts';
import { decide } from '../../egress/decide.ts';
import { parseConnectTarget } from '../../egress/target.ts';

const rules = {
  deny: [],
  allow: [parseHostEntry('*.amazonaws.com'), parseHostEntry('internal.example:8443')],
  supervisorAllow: [],
  repositories: new Map(),
  forgeHosts: [],
  blocked: parseCidrs(DEFAULT_BLOCKED_CIDRS.join(',')),
  ask: true,
};
const grants = { additions: [], repository: [], session: [], once: false, denied: false, streamOpen: true };
const agentTo = (target: string, addresses: string[]) =>
  decide({ caller: 'agent', target: parseConnectTarget(target), addresses, rules, grants });

describe('the blocked ranges under a wildcard entry', () => {
  it('still refuse a name below the wildcard that resolves to a private address', () => {
    const made = agentTo('ec2-52-1-2-3.compute-1.amazonaws.com:443', ['10.0.3.7']);
    expect(made).toMatchObject({ verdict: 'refused' });
  });

  it('(held) an internal host the install names exactly is reached', () => {
    expect(agentTo('internal.example:8443', ['10.1.2.3'])).toMatchObject({ verdict: 'allowed' });
  });
});
