// A stale cache must not start a runner for a Session that moved on. Admission reads nothing: its
// status write names the resourceVersion the pass read. Here the Session finishes while the pass
// that admits it is creating its Pod, so that write fails with 409, and the Pod it made must go at
// once (the Pod TTL is an hour: nothing else would remove it).
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { LABEL_SESSION } from '../../common/session/names.ts';
import { kubeClusterOps, type ClusterOps } from '../../controller/cluster.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { createSession, podOf, startController, testConfig, type RunningController } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';

let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;
let running: RunningController | undefined;
const created: string[] = [];

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('ctl-stale'));
});
afterAll(async () => {
  await running?.stop();
  await deleteNamespace(kc, ns);
});

/**
 * The real operations, except that the Session finishes (as its runner would write it) just before its Pod is created.
 */
function finishingFirst(ops: ClusterOps): ClusterOps {
  return {
    ...ops,
    ensurePod: async (pod) => {
      const session = pod.metadata!.labels![LABEL_SESSION]!;
      await sessions.patchStatus(ns, session, {
        phase: 'Failed',
        completionTime: new Date().toISOString(),
        result: { message: 'ended elsewhere' },
      });
      const made = await ops.ensurePod(pod);
      created.push(session);
      return made;
    },
  };
}

describe('admission against a stale cache', () => {
  it('removes the Pod it made when the status write finds the Session finished meanwhile', async () => {
    running = await startController(
      kc,
      testConfig(ns, { TETHER_RUNNER_NAMESPACE: ns, TETHER_POD_TTL: '1h' }),
      finishingFirst(kubeClusterOps(connectionFromKubeConfig(kc))),
    );
    const name = await createSession(sessions, ns, '+14155550999');
    await eventually(() => expect(created).toContain(name));
    // Never scheduled, so deleted at once.
    await eventually(async () => expect(await podOf(kc, ns, name)).toBeUndefined());
    const session = await sessions.get(ns, name);
    expect(session?.status?.phase).toBe('Failed');
    expect(session?.status?.podName).toBeUndefined();
  });
});
