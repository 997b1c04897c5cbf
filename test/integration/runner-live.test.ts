// A live runner: one runner process (real API server, real Claude Code, scripted model) serves the
// Sessions the test binds to its Pod the way the controller does — the status write (Starting,
// podName) first, then the phone's Role naming the Session — ignores one bound to another Pod, and
// exits 0 on SIGTERM while idle.
import { RbacAuthorizationV1Api, type V1Role } from '@kubernetes/client-node';
import { describe, expect, inject, it } from 'vitest';
import { LABEL_PHONE_HASH, runnerIdentityName, sessionName } from '../../common/session/names.ts';
import type { SessionSpec } from '../../common/session/schema.ts';
import { transition, type Event } from '../../common/session/state-machine.ts';
import { testPhoneHash } from '../support/phone-hash.ts';
import {
  answer,
  makeRemote,
  PHONE,
  specFor,
  startRunner,
  useRunnerTestbed,
  waitFor,
  waitForPhase,
} from '../support/runner.ts';

const bed = useRunnerTestbed('runner-live');
const HASH = testPhoneHash(PHONE);
const ROLE = runnerIdentityName(HASH);
const POD = 'live-pod-runner';

/** The phone's Role as the controller keeps it: read and watch these Sessions, write their status. */
function role(sessions: string[]): V1Role {
  return {
    metadata: { name: ROLE, namespace: bed.ns },
    rules: [
      { apiGroups: ['tether.dev'], resources: ['sessions'], resourceNames: sessions, verbs: ['get', 'watch'] },
      { apiGroups: ['tether.dev'], resources: ['sessions/status'], resourceNames: sessions, verbs: ['get', 'patch'] },
    ],
  };
}

const rbac = () => bed.kc.makeApiClient(RbacAuthorizationV1Api);

async function grant(sessions: string[]): Promise<void> {
  const current = await rbac()
    .readNamespacedRole({ name: ROLE, namespace: bed.ns })
    .catch(() => undefined);
  if (!current) {
    await rbac().createNamespacedRole({ namespace: bed.ns, body: role(sessions) });
    return;
  }
  await rbac().replaceNamespacedRole({
    name: ROLE,
    namespace: bed.ns,
    body: { ...role(sessions), metadata: { ...current.metadata } },
  });
}

/** A Session of the phone, bound to `pod` by the status write the controller makes for this event. */
async function bound(spec: SessionSpec, pod: string, event: Event): Promise<string> {
  const name = sessionName(HASH);
  await bed.sessions.create(bed.ns, name, spec, { labels: { [LABEL_PHONE_HASH]: HASH } });
  const next = transition(undefined, event);
  if (!next.ok) throw new Error(next.error);
  await bed.sessions.patchStatus(bed.ns, name, {
    phase: next.phase,
    podName: pod,
    startTime: new Date().toISOString(),
    runnerStart: event.type === 'RunnerBound' ? 'warm' : 'cold',
  });
  return name;
}

describe('a live runner', { timeout: 240_000 }, () => {
  it('serves two Sessions bound to its Pod, ignores one of another Pod, and exits 0 on SIGTERM while idle', async () => {
    const remote = makeRemote();
    const first = await bound(specFor('script: first\nwrite: one.txt = 1\nsay: Wrote one', remote.url), POD, {
      type: 'PodCreated',
    });
    await grant([first]);
    const runner = startRunner({
      kubeconfig: inject('kubeconfig'),
      namespace: bed.ns,
      name: first,
      env: bed.env({ TETHER_RUNNER_LIVE: 'true', TETHER_POD_NAME: POD }),
    });
    await answer(bed.sessions, bed.ns, first, 'changes', { action: 'approve' });
    await waitForPhase(bed.sessions, bed.ns, first, 'Succeeded');
    await waitFor(bed.sessions, bed.ns, first, () => runner.output().includes('waiting for the next Session'));
    expect(runner.child.exitCode, runner.output()).toBeNull();

    // Another Pod's Session, named in the Role first: never run here.
    const other = await bound(specFor('script: other\nsay: Not here', remote.url), 'another-pod-runner', {
      type: 'PodCreated',
    });
    await grant([first, other]);
    const second = await bound(specFor('script: second\nwrite: two.txt = 2\nsay: Wrote two', remote.url), POD, {
      type: 'RunnerBound',
    });
    await grant([first, other, second]);
    const review = await answer(bed.sessions, bed.ns, second, 'changes', { action: 'approve' });
    // The second review shows only its own change: the first was published and the checkout reset.
    expect(review.status?.result?.diffStat).toContain('two.txt');
    expect(review.status?.result?.diffStat).not.toContain('one.txt');
    const done = await waitForPhase(bed.sessions, bed.ns, second, 'Succeeded');
    expect(done.status?.result?.summary).toBe('Wrote two');
    expect(remote.git('show', `tether/${second}:two.txt`)).toBe('2');
    expect(remote.git('ls-tree', '--name-only', `tether/${second}`).split('\n')).not.toContain('one.txt');
    await waitFor(
      bed.sessions,
      bed.ns,
      second,
      () => runner.output().split('waiting for the next Session').length === 3,
    );

    const ignored = (await bed.sessions.get(bed.ns, other))!;
    expect(ignored.status?.phase).toBe('Starting');
    expect(ignored.status?.progress ?? []).toEqual([]);
    expect(runner.child.exitCode, runner.output()).toBeNull();

    const before = (await bed.sessions.get(bed.ns, second))!;
    runner.child.kill('SIGTERM');
    expect(await runner.exited, runner.output()).toBe(0);
    // Stopped while idle, it wrote nothing on its way out.
    expect((await bed.sessions.get(bed.ns, second))?.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });
});
