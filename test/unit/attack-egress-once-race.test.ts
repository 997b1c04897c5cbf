// "Allow once" lets exactly one connection through, also when the once-grant was kept for the next
// connection (nobody waited when the phone answered) and several connections arrive together: the
// grant is read before the name is resolved and used up only after, so each of them must not see it.
import { describe, expect, it } from 'vitest';
import type { EgressEvent } from '../../common/egress/protocol.ts';
import { admit, type AdmitDeps } from '../../egress/admit.ts';
import { Asks } from '../../egress/asks.ts';
import type { Caller } from '../../egress/callers.ts';
import { baseRules } from './attack-egress-harness.ts';
import { parseConnectTarget } from '../../egress/target.ts';

function setup() {
  const asks = new Asks({
    askWaitMs: 60_000,
    maxWaitingPerSession: 8,
    maxAsksPerSession: 8,
    persistRepositoryGrant: () => undefined,
    counted: () => undefined,
  });
  const ids: string[] = [];
  const stream = { send: (e: EgressEvent) => e.type === 'ask' && ids.push(e.id), close: () => undefined };
  asks.attachStream('s', stream, 'pod');
  const deps: AdmitDeps = {
    rules: baseRules(),
    asks,
    sessions: { get: () => ({ phase: 'Working', podName: 'pod' }), onChange: () => undefined },
    grants: { entriesFor: () => [], add: async () => undefined },
    forges: { current: async () => [] },
    // Any lookup is asynchronous: every connection arriving together reaches it before any finishes.
    resolve: async () => ['192.0.2.7'],
  };
  return { asks, ids, deps, stream };
}

describe('attack: a kept once-grant and connections arriving together', () => {
  it('lets exactly one of them through', async () => {
    const { asks, ids, deps, stream } = setup();
    const agent: Caller = { kind: 'agent', session: 's', pod: 'pod', uid: 'uid-pod' };
    const target = parseConnectTarget('once.example:443');
    // The first connection asks and leaves before the phone answers; the once-grant is kept.
    const leaving = new AbortController();
    const first = admit(deps, agent, target, leaving.signal);
    await new Promise((r) => setImmediate(r));
    leaving.abort();
    expect(await first).toMatchObject({ status: 403 });
    expect(asks.answer('s', ids[0]!, 'once')).toBe(true);
    expect(asks.grantsOf('s', 'once.example', 443).once).toBe(true);
    // The stream closes (the others are then refused at once rather than asked again).
    asks.detachStream('s', stream);

    const together = await Promise.all([1, 2, 3, 4].map(() => admit(deps, agent, target)));
    expect(together.filter((a) => 'address' in a)).toHaveLength(1);
  });
});
