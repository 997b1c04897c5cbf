// Restarts and replicas: deadlines live in status, so an approval timeout fires on time after
// a controller restart; with two replicas only the Lease holder reconciles, and the other
// takes over when it stops.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { spawn } from 'node:child_process';
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../local/control-plane/control-plane.ts';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { createMetrics } from '../../controller/metrics.ts';
import { createReplica, type Replica } from '../../controller/replica.ts';
import {
  adminKubeConfig,
  createNamespace,
  deleteNamespace,
  installSessionCrd,
  sessionClient,
} from '../support/cluster.ts';
import {
  createSession,
  phaseOf,
  reconcilePasses,
  runnerWrites,
  startController,
  testConfig,
  testLogger,
} from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { settled } from '../support/passes.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

let kc: KubeConfig;
let sessions: SessionClient;
const namespaces: string[] = [];

beforeAll(async () => {
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  sessions = sessionClient(kc);
});
afterAll(async () => Promise.all(namespaces.map((ns) => deleteNamespace(kc, ns))));

async function namespace(prefix: string) {
  const ns = await createNamespace(kc, prefix);
  namespaces.push(ns);
  return ns;
}

describe('controller restarts and replicas', () => {
  it('fires an approval timeout at the right time after a restart', async () => {
    const ns = await namespace('ctl-restart');
    const config = testConfig(ns);
    const first = await startController(kc, config);
    const name = await createSession(sessions, ns, '+14155559001', { timeouts: { approval: '5s' } });
    await eventually(async () => expect(await phaseOf(sessions, ns, name)).toBe('Starting'));
    await runnerWrites(sessions, ns, name, { phase: 'Working' });
    const createdAt = new Date().toISOString();
    await runnerWrites(sessions, ns, name, {
      phase: 'AwaitingApproval',
      pending: { id: 'p1', kind: 'changes', createdAt },
    });
    await settled(first, sessions, ns, [name]);
    await first.stop();
    expect(await phaseOf(sessions, ns, name)).toBe('AwaitingApproval');

    // Down for most of the wait: a deadline counted from the restart would come 5s after it.
    const downUntil = Date.parse(createdAt) + 3000;
    await new Promise((r) => setTimeout(r, Math.max(0, downUntil - Date.now())));
    const restartedAt = Date.now();
    const second = await startController(kc, config);
    try {
      const s = await eventually(async () => {
        const x = await sessions.get(ns, name);
        expect(x?.status?.phase).toBe('TimedOut');
        return x!;
      }, 30_000);
      const firedAt = Date.parse(s.status!.completionTime!);
      expect(firedAt - Date.parse(createdAt)).toBeGreaterThanOrEqual(5000);
      expect(firedAt, 'counted from pending.createdAt, not from the restart').toBeLessThan(restartedAt + 5000);
    } finally {
      await second.stop();
    }
  });

  it('runs one active replica of two, and fails over when the leader stops', async () => {
    const ns = await namespace('ctl-ha');
    const lease = { durationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 200 };
    const lost: string[] = [];
    const metrics = ['r1', 'r2'].map(() =>
      createMetrics(() => [], { defaultMetrics: false, timeouts: testConfig(ns) }),
    );
    const replicas: Replica[] = ['r1', 'r2'].map((identity, i) =>
      createReplica({
        kubeConfig: connectionFromKubeConfig(kc),
        config: { ...testConfig(ns, { TETHER_LEADER_ELECTION: 'true' }), identity },
        logger: testLogger,
        metrics: metrics[i]!,
        lease,
        onLostLeadership: () => lost.push(identity),
      }),
    );
    await Promise.all(replicas.map((r) => r.start()));
    try {
      const leader = await eventually(() => {
        const leading = replicas.filter((r) => r.leading);
        expect(leading).toHaveLength(1);
        return leading[0]!;
      });
      const follower = replicas.find((r) => r !== leader)!;
      const followerMetrics = metrics[replicas.indexOf(follower)]!;
      expect(follower.ready()).toBe(true);
      const a = await createSession(sessions, ns, '+14155559002');
      await eventually(async () => expect(await phaseOf(sessions, ns, a)).toBe('Starting'));
      expect(follower.controller).toBeUndefined();
      expect((await reconcilePasses(followerMetrics)).total).toBe(0);

      await leader.stop();
      await eventually(() => expect(follower.leading).toBe(true), 30_000);
      const b = await createSession(sessions, ns, '+14155559003');
      await eventually(async () => expect(await phaseOf(sessions, ns, b)).toBe('Starting'));
      expect((await reconcilePasses(followerMetrics)).total).toBeGreaterThan(0);
      expect(lost).toEqual([]);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
  });

  it('runs as a process: serves metrics, reconciles, and on SIGTERM releases the Lease and exits 0', async () => {
    const ns = await namespace('ctl-proc');
    const port = await freePort();
    const child = spawn(process.execPath, ['controller/main.ts'], {
      env: {
        KUBECONFIG: inject('kubeconfig'),
        TETHER_NAMESPACE: ns,
        TETHER_METRICS_PORT: String(port),
        POD_NAME: 'proc-0',
        TETHER_RUNNER_IMAGE: 'tether-runner:test',
        TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
        TETHER_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await eventually(async () => expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200), 30_000);
      const name = await createSession(sessions, ns, '+14155559004');
      await eventually(async () => expect(await phaseOf(sessions, ns, name)).toBe('Starting'), 15_000);
      // The pass that wrote Starting counts itself once it returns (as a requeue: it arms the start
      // deadline): read the metrics until it has.
      await eventually(async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        expect(text).toContain('tether_leader 1');
        expect(text).toMatch(/tether_reconcile_total\{result="requeue"\} [1-9]/);
      }, 10_000);
      const leases = kc.makeApiClient(CoordinationV1Api);
      expect(
        (await leases.readNamespacedLease({ namespace: ns, name: 'tether-controller' })).spec?.holderIdentity,
      ).toBe('proc-0');
      child.kill('SIGTERM');
      expect(await exited, stderr).toBe(0);
      expect(
        (await leases.readNamespacedLease({ namespace: ns, name: 'tether-controller' })).spec?.holderIdentity,
      ).toBe('');
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});
