// Attack: "deny wins over any allow" (docs/egress.md). A phone's deny for host:port in this Session is
// read after the allow lists: when the repository's grants (the ConfigMap, written by another
// Session of the repository, or an operator) already hold the host, this Session's deny is ignored.
import { describe, expect, it } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { parseCidrs } from '../../egress/cidrs.ts';
import { decide } from '../../egress/decide.ts';
import { parseConnectTarget } from '../../egress/target.ts';

const rules = {
  deny: [],
  allow: [],
  supervisorAllow: [],
  repositories: new Map(),
  forgeHosts: [],
  blocked: parseCidrs('10.0.0.0/8'),
  ask: true,
};

describe("the phone's deny", () => {
  it('wins over a repository grant of the same host', () => {
    const made = decide({
      caller: 'agent',
      target: parseConnectTarget('paste.example:443'),
      addresses: ['203.0.113.5'],
      rules,
      grants: {
        additions: [],
        repository: [parseHostEntry('paste.example:443')],
        session: [],
        once: false,
        denied: true,
        streamOpen: true,
      },
    });
    expect(made).toMatchObject({ verdict: 'refused' });
  });
});
