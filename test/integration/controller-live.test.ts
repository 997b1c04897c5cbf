// The live runner's controller side on a real API server (docs/controller.md, "Keep-alive"): the
// phone's next Session bound to its live runner Pod (no Pod made), the Role naming it only after the
// status write, the keep-alive's expiry, another workspace or phone never bound, a deleted Session
// sparing a Pod another is bound to, and a lost Pod replaced once. The controller runs in-process;
// the test plays the kubelet (Pod status) and the runner (its status writes).
import {
  CoreV1Api,
  EventsV1Api,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { isNotFound } from '../../common/kube/errors.ts';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { runnerIdentityName, runnerName, workspaceName } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { kubeClusterOps, type ClusterOps } from '../../controller/cluster.ts';
import { grantedSessions } from '../../controller/identity.ts';
import {
  adminKubeConfig,
  createNamespace,
  deleteNamespace,
  installSessionCrd,
  sessionClient,
} from '../support/cluster.ts';
import {
  createSession,
  runnerWrites,
  startController,
  testConfig,
  type RunningController,
} from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { settled } from '../support/passes.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

/** Long enough for a bind after an end on a loaded machine; short enough to wait out once. */
const KEEP_ALIVE = '20s';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let kc: KubeConfig;
let ns: string;
let runners: string;
let sessions: SessionClient;
let running: RunningController;
/** The controller's writes, in order: `<call> <name>`. */
const writes: string[] = [];

beforeAll(async () => {
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  [ns, runners] = await Promise.all([createNamespace(kc, 'ctl-live'), createNamespace(kc, 'ctl-live-run')]);
  sessions = sessionClient(kc);
  const config = testConfig(ns, { TETHER_RUNNER_NAMESPACE: runners, TETHER_RUNNER_KEEP_ALIVE: KEEP_ALIVE });
  running = await startController(kc, config, recording(kubeClusterOps(connectionFromKubeConfig(kc))));
});
afterAll(async () => {
  await running?.stop();
  await Promise.all([deleteNamespace(kc, ns), deleteNamespace(kc, runners)]);
});

function recording(ops: ClusterOps): ClusterOps {
  return {
    ...ops,
    patchStatus: async (namespace, name, status, version) => {
      const written = await ops.patchStatus(namespace, name, status, version);
      writes.push(`status ${name} ${status.podName ?? ''}`.trim());
      return written;
    },
    ensureIdentity: async (identity, known) => {
      await ops.ensureIdentity(identity, known);
      writes.push(`role ${grantedSessions(identity.role).join(',')}`);
    },
    ensurePod: async (pod) => {
      writes.push(`createPod ${pod.metadata!.name}`);
      return ops.ensurePod(pod);
    },
  };
}

let phoneSeq = 0;
const newPhone = () => `+1415556${String(1000 + phoneSeq++).padStart(4, '0')}`;
const core = () => kc.makeApiClient(CoreV1Api);
const session = async (name: string) => (await sessions.get(ns, name))!;

async function pod(name: string): Promise<V1Pod | undefined> {
  try {
    return await core().readNamespacedPod({ namespace: runners, name });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** The kubelet's part: the Pod runs, its runner container too. */
async function podRuns(name: string): Promise<void> {
  const state = { running: { startedAt: new Date().toISOString() } };
  const runner = { name: 'runner', image: 'tether-runner:test', imageID: '', ready: true, restartCount: 0, state };
  const body = { status: { phase: 'Running', containerStatuses: [runner] } };
  await core().patchNamespacedPodStatus({ namespace: runners, name, body }, mergePatch);
}

async function until(name: string, check: (s: Session) => void): Promise<Session> {
  return eventually(async () => {
    const s = await session(name);
    check(s);
    return s;
  }, 30_000);
}

const finished = (s: Session) => s.status?.conditions?.find((c) => c.type === 'Finished')?.reason;

/** The runner's part: the Session runs and succeeds without changes; the controller records the end. */
async function runToEnd(name: string): Promise<Session> {
  await runnerWrites(sessions, ns, name, { phase: 'Working' });
  await runnerWrites(sessions, ns, name, { phase: 'Succeeded', completionTime: new Date().toISOString() });
  return until(name, (s) => expect(finished(s)).toBe('Completed'));
}

/** A phone's first command, run to its end on a Pod made for it, left live. */
async function firstCommand(phone: string, spec = {}): Promise<string> {
  const first = await createSession(sessions, ns, phone, spec);
  await until(first, (s) => expect(s.status).toMatchObject({ phase: 'Starting', runnerStart: 'cold' }));
  await podRuns(runnerName(first));
  await runToEnd(first);
  return first;
}

const starting = (s: Session) => expect(s.status?.phase).toBe('Starting');

describe('keep-alive: the phone’s live runner Pod', () => {
  it(`binds the phone's next Session to its live Pod (no Pod made): status first (Starting, podName, warm), then \
the Role naming it`, async () => {
    const phone = newPhone();
    const first = await firstCommand(phone);
    const live = runnerName(first);
    const before = writes.length;
    const next = await createSession(sessions, ns, phone);
    const bound = await until(next, starting);
    expect(bound.status).toMatchObject({ podName: live, runnerStart: 'warm', startTime: expect.any(String) });
    expect(bound.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Admitted', reason: 'RunnerBound' }),
    );
    await eventually(async () => {
      const role = await kc
        .makeApiClient(RbacAuthorizationV1Api)
        .readNamespacedRole({ namespace: ns, name: runnerIdentityName(testPhoneHash(phone)) });
      expect(grantedSessions(role)).toContain(next);
    });
    const mine = writes.slice(before).filter((w) => w.includes(next));
    expect(mine.slice(0, 2)).toEqual([`status ${next} ${live}`, expect.stringMatching(/^role .*/)]);
    expect(writes.slice(before).filter((w) => w.startsWith('createPod'))).toEqual([]);
    expect(await pod(runnerName(next))).toBeUndefined();
    const { values } = await running.metrics.registry.getSingleMetric('tether_sessions_started_total')!.get();
    expect(values.find((v) => v.labels.start === 'warm')?.value).toBeGreaterThanOrEqual(1);
  });

  it('deletes the live Pod once the keep-alive after its last Session has run out', async () => {
    const first = await firstCommand(newPhone());
    const ended = Date.parse((await session(first)).status!.completionTime!);
    expect(await pod(runnerName(first)), 'kept live after the end').toBeDefined();
    await eventually(async () => expect(await pod(runnerName(first))).toBeUndefined(), 60_000, 250);
    expect(Date.now() - ended).toBeGreaterThanOrEqual(20_000);
  });

  it(`lets the idle live Pod go before another workspace's Pod is made; never binds another phone's`, async () => {
    const phone = newPhone();
    const first = await firstCommand(phone);
    const other = await createSession(sessions, ns, phone, {
      repo: { url: 'https://github.com/acme/api.git' },
      workspace: `${workspaceName(testPhoneHash(phone))}-api`,
    });
    const made = await until(other, starting);
    expect(made.status).toMatchObject({ podName: runnerName(other), runnerStart: 'cold' });
    await eventually(async () => {
      const old = await pod(runnerName(first));
      expect(old === undefined || old.metadata?.deletionTimestamp !== undefined).toBe(true);
    });

    const lender = await firstCommand(newPhone());
    const stranger = await createSession(sessions, ns, newPhone());
    expect((await until(stranger, starting)).status).toMatchObject({
      podName: runnerName(stranger),
      runnerStart: 'cold',
    });
    expect(await pod(runnerName(lender)), "the other phone's live Pod stays").toBeDefined();
  });

  it('never deletes, with an old Session, the Pod a newer Session of the phone is bound to', async () => {
    const phone = newPhone();
    const first = await firstCommand(phone);
    const next = await createSession(sessions, ns, phone);
    await until(next, starting);
    await runnerWrites(sessions, ns, next, { phase: 'Working' });
    await sessions.delete(ns, first);
    await eventually(async () => expect(await sessions.get(ns, first)).toBeUndefined());
    await settled(running, sessions, ns, [next]);
    const live = await pod(runnerName(first));
    expect(live?.metadata?.deletionTimestamp).toBeUndefined();
    expect((await session(next)).status?.phase).toBe('Working');
  });
});

describe('a run that survives its Pod', () => {
  it(`replaces a lost runner Pod once (same phase, startTime kept, RunnerReplaced Event); a second loss ends the \
run PodLost`, async () => {
    const name = await createSession(sessions, ns, newPhone());
    await until(name, starting);
    await podRuns(runnerName(name));
    const working = await runnerWrites(sessions, ns, name, { phase: 'Working' });
    await core().deleteNamespacedPod({ namespace: runners, name: runnerName(name) });
    const replaced = await until(name, (s) => expect(s.status?.runnerRestarts).toBe(1));
    expect(replaced.status).toMatchObject({
      phase: 'Working',
      podName: runnerName(name, 1),
      startTime: working.status!.startTime,
    });
    expect(await pod(runnerName(name, 1))).toBeDefined();
    const events = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns });
    expect(events.items.filter((e) => e.regarding?.name === name && e.reason === 'RunnerReplaced')).toEqual([
      expect.objectContaining({
        type: 'Warning',
        note: `runner pod ${runnerName(name)} was lost; ${runnerName(name, 1)} continues the run`,
      }),
    ]);

    await core().deleteNamespacedPod({ namespace: runners, name: runnerName(name, 1) });
    const lost = await until(name, (s) => expect(s.status?.phase).toBe('Failed'));
    expect(finished(lost)).toBe('PodLost');
    expect(await pod(runnerName(name, 2))).toBeUndefined();
  });
});
