// runner.prePull through the real helm: a DaemonSet that pulls the very image the controller puts in
// runner Pods, onto the nodes those Pods may use, and then only sleeps under Pod Security "restricted".
import { beforeAll, describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { loadConfig } from '../../controller/config.ts';
import { testSession } from './controller-fixtures.ts';
import {
  CHART_DIR,
  HELM_SETUP_TIMEOUT,
  controllerData,
  find,
  helm,
  helmBin,
  render,
  renderError,
  withValueArgs,
} from './chart-render.ts';
import type { KubeObject } from './chart-render.ts';
import type { V1DaemonSet } from '@kubernetes/client-node';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const tolerations = [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }];
const affinity = {
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['agents'] }] }],
    },
  },
};
const values = {
  image: { registry: 'registry.example.com/tether', tag: '1.2.3', digests: { runner: `sha256:${'b'.repeat(64)}` } },
  imagePullSecrets: [{ name: 'regcred' }],
  runner: {
    prePull: { enabled: true },
    nodeSelector: { pool: 'agents' },
    tolerations,
    affinity,
    runtimeClass: { name: 'gvisor' },
    securityContext: { runAsUser: 1000680000, agentRunAsUser: 1000680001, runAsGroup: 1000680000 },
  },
};

/** The runner Pod the controller builds from the ConfigMap these values render. */
function runnerPodOf(objects: KubeObject[]) {
  return desiredPod(testSession(), loadConfig(controllerData(objects)));
}

describe('runner.prePull', () => {
  it('is off by default', async () => {
    expect((await render()).filter((o) => o.kind === 'DaemonSet')).toEqual([]);
  });

  it(`pulls the runner Pods' own image onto the nodes they may use, as they would (runtime, no pull \
secret)`, async () => {
    const objects = await render(values);
    const daemonSet = find(objects, 'DaemonSet', '-runner-pre-pull') as unknown as V1DaemonSet;
    const runner = runnerPodOf(objects).spec!;
    const spec = daemonSet.spec!.template.spec!;
    expect(spec.containers.map((c) => c.image)).toEqual([runner.containers[0]!.image]);
    expect(spec.containers[0]!.image).toBe(`registry.example.com/tether/tether-runner:1.2.3@sha256:${'b'.repeat(64)}`);
    expect(spec.containers[0]!.imagePullPolicy).toBe(runner.containers[0]!.imagePullPolicy);
    expect(spec.imagePullSecrets).toBeUndefined();
    expect(runner.imagePullSecrets).toBeUndefined();
    expect(spec.nodeSelector).toEqual(runner.nodeSelector);
    expect(spec.tolerations).toEqual(runner.tolerations);
    expect(spec.affinity).toEqual(runner.affinity);
    expect(spec.runtimeClassName).toBe(runner.runtimeClassName);
    expect(daemonSet.spec!.updateStrategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: '100%' },
    });
  });

  it('only sleeps: no token, no capabilities, read-only root, the supervisor uid, tiny resources', async () => {
    const daemonSet = find(await render(values), 'DaemonSet', '-runner-pre-pull') as unknown as V1DaemonSet;
    const spec = daemonSet.spec!.template.spec!;
    const [container] = spec.containers;
    expect(spec.containers).toHaveLength(1);
    expect(container!.args).toEqual(['sleep', 'infinity']);
    expect(container!.command).toBeUndefined();
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.serviceAccountName).toBeUndefined();
    expect(spec.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000680000,
      runAsGroup: 1000680000,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(container!.resources).toEqual({
      requests: { cpu: '1m', memory: '8Mi' },
      limits: { cpu: '10m', memory: '16Mi' },
    });
    expect(container!.env ?? []).toEqual([]);
    expect(spec.volumes ?? []).toEqual([]);
  });

  it('passes helm lint --strict when on', async () => {
    const result = await withValueArgs(values, (args) => helm(['lint', '--strict', CHART_DIR, ...args]));
    expect(result.stderr + result.stdout).toContain('0 chart(s) failed');
    expect(result.code).toBe(0);
  });

  it.each([
    ['a string for enabled', { enabled: 'yes' }, /enabled/],
    ['an unknown key', { enabled: true, image: 'busybox' }, /image/],
    ['an unknown resource key', { enabled: true, resources: { requests: { gpu: 1 } } }, /gpu/],
  ])('refuses %s', async (_, prePull, message) => {
    expect(await renderError({ runner: { prePull } })).toMatch(message);
  });
});
