// A live runner: one runner process (real API server, real Claude Code, scripted model), with only
// the rights of the phone's runner identity, serves the Sessions the test binds to its Pod the way
// the controller does — the status write (Starting, podName) first, then the phone's Role naming the
// Session — ignores one bound to another Pod, and exits 0 on SIGTERM while idle. With an agent
// container (the agent host as a process of its own), the agent host is reset between two Sessions.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api, type V1Role } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { runnerRules } from '../../controller/identity.ts';
import { kubeconfigYaml } from '../../local/control-plane/control-plane.ts';
import { LABEL_PHONE_HASH, runnerIdentityName, sessionName } from '../../common/session/names.ts';
import type { SessionSpec } from '../../common/session/schema.ts';
import { transition, type Event } from '../../common/session/state-machine.ts';
import { socketFolder, startAgentHost } from '../support/agent-channel.ts';
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

/** The phone's Role as the controller writes it. */
const role = (sessions: string[]): V1Role => ({
  metadata: { name: ROLE, namespace: bed.ns },
  rules: runnerRules(sessions, ROLE),
});

const rbac = () => bed.kc.makeApiClient(RbacAuthorizationV1Api);

let kubeconfig: Promise<string> | undefined;

/** A kubeconfig of the phone's runner ServiceAccount, bound to its Role: all a runner Pod may do. */
async function makeRunnerKubeconfig(): Promise<string> {
  const core = bed.kc.makeApiClient(CoreV1Api);
  const meta = { name: ROLE, namespace: bed.ns };
  await core.createNamespacedServiceAccount({ namespace: bed.ns, body: { metadata: meta } });
  await rbac().createNamespacedRoleBinding({
    namespace: bed.ns,
    body: {
      metadata: meta,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: ROLE },
      subjects: [{ kind: 'ServiceAccount', ...meta }],
    },
  });
  const { status } = await core.createNamespacedServiceAccountToken({
    ...meta,
    body: { spec: { audiences: [], expirationSeconds: 900 } },
  });
  const cluster = bed.kc.getCurrentCluster()!;
  const file = join(mkdtempSync(join(tmpdir(), 'tether-runner-kc-')), 'kubeconfig');
  writeFileSync(
    file,
    kubeconfigYaml(cluster.server, { caCert: cluster.caFile! }, { name: ROLE, token: status!.token }),
  );
  return file;
}
const runnerKubeconfig = () => (kubeconfig ??= makeRunnerKubeconfig());

/** The names the Role holds now. */
const granted = async () =>
  (
    await rbac()
      .readNamespacedRole({ name: ROLE, namespace: bed.ns })
      .catch(() => undefined)
  )?.rules?.[0]?.resourceNames ?? [];

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
  it(`serves two Sessions bound to its Pod, ignores one of another Pod, and exits 0 on SIGTERM while \
idle`, async () => {
    const remote = makeRemote();
    const first = await bound(specFor('script: first\nwrite: one.txt = 1\nsay: Wrote one', remote.url), POD, {
      type: 'PodCreated',
    });
    await grant([first]);
    const runner = startRunner({
      kubeconfig: await runnerKubeconfig(),
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
    await grant([...(await granted()), other]);
    const second = await bound(specFor('script: second\nwrite: two.txt = 2\nsay: Wrote two', remote.url), POD, {
      type: 'RunnerBound',
    });
    await grant([...(await granted()), second]);
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

  it(`resets the agent container between two Sessions: its temporary folder emptied, \
the agent host re-exec'd`, async () => {
    const pod = 'two-containers-runner';
    const remote = makeRemote();
    const agentTmp = mkdtempSync(join(tmpdir(), 'tether-agent-tmp-'));
    writeFileSync(join(agentTmp, 'left-by-command-1'), 'x');
    const first = await bound(specFor('script:\nsay: One', remote.url), pod, { type: 'PodCreated' });
    await grant([...(await granted()), first]);
    const socketPath = join(socketFolder(), 'supervisor', 'agent.sock');
    const runner = startRunner({
      kubeconfig: await runnerKubeconfig(),
      namespace: bed.ns,
      name: first,
      env: bed.env({ TETHER_RUNNER_LIVE: 'true', TETHER_POD_NAME: pod, TETHER_AGENT_SOCKET: socketPath }),
    });
    const host = startAgentHost({ socketPath, env: { TMPDIR: agentTmp } });
    try {
      await waitForPhase(bed.sessions, bed.ns, first, 'Succeeded');
      await waitFor(bed.sessions, bed.ns, first, () => runner.output().includes('waiting for the next Session'));
      expect(existsSync(join(agentTmp, 'left-by-command-1'))).toBe(false);
      const reset = runner
        .output()
        .split('\n')
        .find((line) => line.includes('"msg":"agent container reset"'));
      expect(JSON.parse(reset!)).toMatchObject({
        lingering: 0,
        removed: expect.any(Number),
        startedAt: expect.any(Number),
      });

      const second = await bound(specFor('script:\nsay: Two', remote.url), pod, { type: 'RunnerBound' });
      await grant([...(await granted()), second]);
      const done = await waitForPhase(bed.sessions, bed.ns, second, 'Succeeded');
      expect(done.status?.result?.summary).toBe('Two');
      runner.child.kill('SIGTERM');
      expect(await runner.exited, runner.output()).toBe(0);
    } finally {
      if (host.child.exitCode === null) host.child.kill('SIGKILL');
    }
  });
});
