// Every phase transition of docs/architecture.md ("Phases"), driven through the real API server: the controller
// in-process, the kubelet and the runner played by the test through the API.
import { CoreV1Api, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { previewPrompt } from '../../common/session/display.ts';
import { runnerIdentityName, runnerName, workspaceName } from '../../common/session/names.ts';
import { createSession, podOf, runnerWrites, setPodPhase, controllerSuite } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { settled } from '../support/passes.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const t = controllerSuite('ctl-life');
let phoneSeq = 0;
const newPhone = () => `+1415555${String(1000 + phoneSeq++).padStart(4, '0')}`;

const session = (name: string) => t.sessions.get(t.ns, name).then((s) => s!);
const until = async (name: string, phase: string) =>
  eventually(async () => {
    const s = await session(name);
    expect(s.status?.phase).toBe(phase);
    return s;
  });
const finishedReason = (s: Awaited<ReturnType<typeof session>>) =>
  s.status?.conditions?.find((c) => c.type === 'Finished')?.reason;
const now = () => new Date().toISOString();
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe('controller lifecycle on a real API server', () => {
  it(`starts a new Session: workspace, the phone's runner identity and the Pod in the runner namespace; Starting with \
podName, startTime, display and conditions`, async () => {
    const phone = newPhone();
    const name = await createSession(t.sessions, t.ns, phone, {
      prompt: 'make the navbar sticky and add a dark-mode toggle please',
    });
    const s = await until(name, 'Starting');
    expect(s.status).toMatchObject({
      podName: runnerName(name),
      startTime: expect.any(String),
      observedGeneration: 1,
      display: {
        phone: expect.stringMatching(/^\+1415•••\d{4}$/),
        prompt: previewPrompt('make the navbar sticky and add a dark-mode toggle please'),
      },
    });
    expect(s.status?.conditions).toEqual([
      expect.objectContaining({ type: 'Admitted', status: 'True', reason: 'PodCreated' }),
    ]);
    const core = t.kc.makeApiClient(CoreV1Api);
    const pvc = await core.readNamespacedPersistentVolumeClaim({
      namespace: t.runners,
      name: workspaceName(testPhoneHash(phone)),
    });
    expect(pvc.metadata?.ownerReferences).toBeUndefined();
    const pod = await podOf(t.kc, t.runners, name);
    expect(pod?.metadata?.ownerReferences, 'no owner reference across namespaces').toBeUndefined();
    expect(pod?.metadata?.annotations?.['tether.dev/session-uid']).toBe(s.metadata.uid);
    const identity = runnerIdentityName(testPhoneHash(phone));
    expect(pod?.spec?.serviceAccountName).toBe(identity);
    await core.readNamespacedServiceAccount({ namespace: t.runners, name: identity });
    const rbac = t.kc.makeApiClient(RbacAuthorizationV1Api);
    const role = await rbac.readNamespacedRole({ namespace: t.ns, name: identity });
    const [sessionRules, roleRule] = [role.rules!.slice(0, 2), role.rules![2]];
    expect(sessionRules.every((r) => r.resourceNames?.join() === name)).toBe(true);
    expect(roleRule).toMatchObject({ resources: ['roles'], resourceNames: [identity], verbs: ['get', 'watch'] });
    const binding = await rbac.readNamespacedRoleBinding({ namespace: t.ns, name: identity });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: identity, namespace: t.runners }]);
  });

  it('removes the runner Pod of a deleted Session (no owner reference reaches across namespaces)', async () => {
    const name = await createSession(t.sessions, t.ns, newPhone());
    await until(name, 'Starting');
    await t.sessions.delete(t.ns, name);
    await eventually(async () => expect(await podOf(t.kc, t.runners, name)).toBeUndefined());
  });

  it(`follows the runner Starting → Working → AwaitingApproval → Publishing → Succeeded, then removes the Pod after \
its TTL`, async () => {
    const name = await createSession(t.sessions, t.ns, newPhone());
    await until(name, 'Starting');
    await setPodPhase(t.kc, t.runners, name, 'Running');
    await runnerWrites(t.sessions, t.ns, name, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, name, {
      phase: 'AwaitingApproval',
      pending: { id: 'p1', kind: 'changes', createdAt: now() },
    });
    await runnerWrites(t.sessions, t.ns, name, { phase: 'Publishing', pending: null } as never);
    await runnerWrites(t.sessions, t.ns, name, {
      phase: 'Succeeded',
      completionTime: now(),
      result: { prUrl: 'https://github.com/acme/web/pull/1' },
    });
    const done = await eventually(async () => {
      const s = await session(name);
      expect(finishedReason(s)).toBe('Published');
      return s;
    });
    expect(done.status?.display?.duration).toMatch(/^\d+s$/);
    expect(await podOf(t.kc, t.runners, name)).toBeDefined();
    await setPodPhase(t.kc, t.runners, name, 'Succeeded');
    await eventually(async () => expect(await podOf(t.kc, t.runners, name)).toBeUndefined());
  });

  it('Working → Succeeded without changes, and Rejected after a rejected change', async () => {
    const a = await createSession(t.sessions, t.ns, newPhone());
    await until(a, 'Starting');
    await runnerWrites(t.sessions, t.ns, a, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, a, { phase: 'Succeeded', completionTime: now() });
    expect(
      finishedReason(
        await eventually(async () => {
          const s = await session(a);
          expect(finishedReason(s)).toBeDefined();
          return s;
        }),
      ),
    ).toBe('Completed');

    const b = await createSession(t.sessions, t.ns, newPhone());
    await until(b, 'Starting');
    await runnerWrites(t.sessions, t.ns, b, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, b, {
      phase: 'AwaitingApproval',
      pending: { id: 'p1', kind: 'changes', createdAt: now() },
    });
    await runnerWrites(t.sessions, t.ns, b, { phase: 'Rejected', completionTime: now() });
    await eventually(async () => expect(finishedReason(await session(b))).toBe('Rejected'));
  });

  it('cancels an active Session: Cancelled, Pod deleted', async () => {
    const name = await createSession(t.sessions, t.ns, newPhone());
    await until(name, 'Starting');
    await runnerWrites(t.sessions, t.ns, name, { phase: 'Working' });
    await t.sessions.patch(t.ns, name, { spec: { cancel: true } });
    const s = await until(name, 'Cancelled');
    expect(finishedReason(s)).toBe('Cancelled');
    expect(s.status?.completionTime).toBeDefined();
    await eventually(async () => expect(await podOf(t.kc, t.runners, name)).toBeUndefined());
  });

  it('times out an unanswered approval → TimedOut and stops the Pod', async () => {
    const name = await createSession(t.sessions, t.ns, newPhone(), { timeouts: { approval: '1s' } });
    await until(name, 'Starting');
    await runnerWrites(t.sessions, t.ns, name, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, name, {
      phase: 'AwaitingApproval',
      pending: { id: 'p1', kind: 'tool', tool: 'Bash', createdAt: now() },
    });
    const s = await until(name, 'TimedOut');
    expect(finishedReason(s)).toBe('ApprovalTimeout');
    expect(Date.parse(s.status!.completionTime!) - Date.parse(s.status!.pending!.createdAt)).toBeGreaterThanOrEqual(
      1000,
    );
    await eventually(async () => expect(await podOf(t.kc, t.runners, name)).toBeUndefined());
  });

  it('fails a run that exceeds its run timeout → Failed/RunTimeout', async () => {
    const name = await createSession(t.sessions, t.ns, newPhone(), { timeouts: { run: '2s' } });
    await until(name, 'Starting');
    await runnerWrites(t.sessions, t.ns, name, { phase: 'Working' });
    const s = await until(name, 'Failed');
    expect(finishedReason(s)).toBe('RunTimeout');
    expect(s.status?.result?.message).toMatch(/longer than 2s/);
  });

  it(`replaces a crashed runner once, then turns a second crash into Failed/PodLost with its exit code, and a \
vanished Pod too`, async () => {
    const core = t.kc.makeApiClient(CoreV1Api);
    const a = await createSession(t.sessions, t.ns, newPhone());
    await until(a, 'Starting');
    await runnerWrites(t.sessions, t.ns, a, { phase: 'Working' });
    await setPodPhase(t.kc, t.runners, a, 'Failed', 137);
    await eventually(async () => expect((await session(a)).status).toMatchObject({ runnerRestarts: 1 }));
    const terminated = { exitCode: 137, reason: 'Error', startedAt: now(), finishedAt: now() };
    const runner = { name: 'runner', image: 'tether-runner:test', imageID: '', ready: false, restartCount: 0 };
    const body = { status: { phase: 'Failed', containerStatuses: [{ ...runner, state: { terminated } }] } };
    await core.patchNamespacedPodStatus({ namespace: t.runners, name: runnerName(a, 1), body }, mergePatch);
    const s = await until(a, 'Failed');
    expect(finishedReason(s)).toBe('PodLost');
    expect(s.status?.result).toMatchObject({ exitCode: 137, message: expect.stringContaining('code 137') });

    const b = await createSession(t.sessions, t.ns, newPhone());
    await until(b, 'Starting');
    await core.deleteNamespacedPod({ namespace: t.runners, name: runnerName(b) });
    await eventually(async () => expect((await session(b)).status).toMatchObject({ runnerRestarts: 1 }));
    await core.deleteNamespacedPod({ namespace: t.runners, name: runnerName(b, 1) });
    const lost = await until(b, 'Failed');
    expect(lost.status?.result?.message).toMatch(/disappeared|deleted/);
  });

  it('records an agent failure written by the runner (Failed/AgentFailed) and keeps its message', async () => {
    const name = await createSession(t.sessions, t.ns, newPhone());
    await until(name, 'Starting');
    await runnerWrites(t.sessions, t.ns, name, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, name, {
      phase: 'Failed',
      completionTime: now(),
      result: { message: 'npm test failed', exitCode: 1 },
    });
    const s = await eventually(async () => {
      const x = await session(name);
      expect(finishedReason(x)).toBe('AgentFailed');
      return x;
    });
    expect(s.status?.result?.message).toBe('npm test failed');
  });

  it('lets the runner go back to Working after an answered tool request, and measures the wait', async () => {
    const wait = async () => {
      const text = await t.running.metrics.registry.getSingleMetricAsString('tether_approval_wait_seconds');
      return { count: Number(text.match(/_count (\S+)/)![1]), sum: Number(text.match(/_sum (\S+)/)![1]) };
    };
    const before = await wait();
    const name = await createSession(t.sessions, t.ns, newPhone());
    await until(name, 'Starting');
    await runnerWrites(t.sessions, t.ns, name, { phase: 'Working' });
    await runnerWrites(t.sessions, t.ns, name, {
      phase: 'AwaitingApproval',
      pending: { id: 't1', kind: 'tool', tool: 'Bash', createdAt: new Date(Date.now() - 2000).toISOString() },
    });
    await settled(t.running, t.sessions, t.ns, [name]);
    await runnerWrites(t.sessions, t.ns, name, { phase: 'Working', pending: null } as never);
    await eventually(async () => expect((await wait()).count).toBe(before.count + 1));
    expect((await wait()).sum - before.sum).toBeGreaterThanOrEqual(2);
    await settled(t.running, t.sessions, t.ns, [name]);
    expect((await session(name)).status?.phase).toBe('Working');
  });
});
