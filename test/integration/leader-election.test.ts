// Lease-based leader election against the real API server: one leader, release on stop,
// take-over when a leader vanishes, and a cut-off leader stepping down by itself.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeaderElector, type LeaderElector } from '../../common/kube/leader-election.ts';
import { adminKubeConfig, createNamespace, deleteNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';

const logger = pino({ level: 'silent' });
let kc: KubeConfig;
let ns: string;

beforeAll(async () => {
  kc = adminKubeConfig();
  ns = await createNamespace(kc, 'lease');
});
afterAll(async () => deleteNamespace(kc, ns));

function elector(identity: string, lease: string, over: KubeConfig = kc) {
  const events: string[] = [];
  const e: LeaderElector = createLeaderElector({
    kubeConfig: connectionFromKubeConfig(over),
    namespace: ns,
    name: lease,
    identity,
    logger,
    leaseDurationMs: 2000,
    renewDeadlineMs: 1500,
    retryPeriodMs: 150,
    onStartedLeading: () => events.push('start'),
    onStoppedLeading: () => events.push('stop'),
  });
  return { e, events };
}

const holder = async (lease: string) =>
  (await kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: lease, namespace: ns })).spec;

describe('leader election on a real API server', () => {
  it('elects exactly one leader and hands over at once when it stops (releasing the Lease)', async () => {
    const proxy = await startFaultProxy(kc);
    const a = elector('a', 'l1');
    const b = elector('b', 'l1', proxy.kubeConfig);
    a.e.start();
    await eventually(() => expect(a.e.isLeader).toBe(true));
    b.e.start();
    // b's second read of the Lease is sent once its first attempt, against a's valid Lease, has ended.
    await eventually(
      () => expect(proxy.requests.filter((r) => /^GET .*\/leases\/l1\b/.test(r)).length).toBeGreaterThanOrEqual(2),
      30_000,
    );
    expect(b.e.isLeader).toBe(false);
    const held = await holder('l1');
    expect(held?.holderIdentity).toBe('a');
    expect(held?.leaseDurationSeconds).toBe(2);

    await a.e.stop();
    expect(a.events).toEqual(['start', 'stop']);
    await eventually(() => expect(b.e.isLeader).toBe(true), 30_000);
    const after = await holder('l1');
    expect(after?.holderIdentity).toBe('b');
    expect(after?.leaseTransitions).toBe(1);
    const time = (t: unknown) => new Date(t as string).getTime();
    expect(time(after?.acquireTime), "taken before a's Lease would have run out").toBeLessThan(
      time(held?.renewTime) + 2000,
    );
    await b.e.stop();
    expect((await holder('l1'))?.holderIdentity).toBe('');
    await proxy.close();
  });

  it('takes over after the lease expires when the leader vanishes; the cut-off leader steps down', async () => {
    const proxy = await startFaultProxy(kc);
    const a = elector('a', 'l2', proxy.kubeConfig);
    const b = elector('b', 'l2');
    a.e.start();
    await eventually(() => expect(a.e.isLeader).toBe(true));
    b.e.start();
    await proxy.close();
    const cutAt = Date.now();
    await eventually(() => expect(a.events).toEqual(['start', 'stop']));
    expect(Date.now() - cutAt).toBeGreaterThanOrEqual(1000);
    await eventually(() => expect(b.e.isLeader).toBe(true));
    expect(Date.now() - cutAt).toBeGreaterThanOrEqual(1800);
    expect((await holder('l2'))?.holderIdentity).toBe('b');
    await a.e.stop();
    await b.e.stop();
  });

  it('never has two leaders among five electors over several hand-overs', async () => {
    const all = ['p', 'q', 'r', 's', 't'].map((id) => elector(id, 'l3'));
    let overlap = 0;
    const watch = setInterval(() => {
      if (all.filter((x) => x.e.isLeader).length > 1) overlap++;
    }, 5);
    for (const x of all) x.e.start();
    const leaders: string[] = [];
    for (let round = 0; round < 3; round++) {
      const current = await eventually(() => {
        const found = all.find((x) => x.e.isLeader);
        expect(found).toBeDefined();
        return found!;
      });
      leaders.push((await holder('l3'))!.holderIdentity!);
      await current.e.stop();
    }
    clearInterval(watch);
    await Promise.all(all.map((x) => x.e.stop()));
    expect(new Set(leaders).size).toBe(3);
    expect(overlap).toBe(0);
  });
});
