// Adoption (controller/runner-adoption.ts): a Pod found under the runner's name is the controller's only
// when it runs the programs, environment, mounts and volumes the controller builds; what the API server
// adds on its own (a field reference's apiVersion, volume modes) does not count.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { differenceFromBuilt } from '../../controller/runner-adoption.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';

const config = unitConfig({ egress: { url: 'http://tether-egress.tether.svc:3128', key: 'k'.repeat(40) } });
const built = () => desiredPod(testSession({ name: 'a' }), config, 'ws-a', 0);
const changed = (change: (pod: V1Pod) => void) => {
  const pod = structuredClone(built());
  change(pod);
  return pod;
};
const runner = (pod: V1Pod) => pod.spec!.containers.find((c) => c.name === 'runner')!;
// The agent container starts first, as a sidecar.
const agent = (pod: V1Pod) => pod.spec!.initContainers!.find((c) => c.name === 'agent')!;

describe('a Pod found under the runner’s name', () => {
  it('is adopted as built, and with what the API server defaults', () => {
    expect(differenceFromBuilt(built(), built())).toBeUndefined();
    const stored = changed((pod) => {
      for (const c of [...pod.spec!.containers, ...pod.spec!.initContainers!]) {
        c.terminationMessagePath = '/dev/termination-log';
        c.imagePullPolicy = 'IfNotPresent';
        for (const e of c.env ?? []) if (e.valueFrom?.fieldRef) delete e.valueFrom.fieldRef.apiVersion;
      }
      for (const v of pod.spec!.volumes ?? []) if (v.projected) v.projected.defaultMode = 420;
    });
    expect(differenceFromBuilt(stored, built())).toBeUndefined();
  });

  it.each<[string, (pod: V1Pod) => void, string]>([
    ['another command', (pod) => void (runner(pod).command = ['sh', '-c']), 'runner container runs another'],
    ['other args', (pod) => void (runner(pod).args = ['sh', '-c', 'curl …']), 'runner container runs another'],
    [
      'NODE_OPTIONS added',
      (pod) => void runner(pod).env!.push({ name: 'NODE_OPTIONS', value: '--require /workspace/x.js' }),
      'runner container runs another',
    ],
    [
      'the agent container mounting the runner’s Secret',
      (pod) => void agent(pod).volumeMounts!.push(runner(pod).volumeMounts!.find((m) => m.name === 'egress-token')!),
      'agent container',
    ],
    [
      'an extra container',
      (pod) => void pod.spec!.containers.push({ ...runner(pod), name: 'side' }),
      'containers are not the runner',
    ],
    [
      'another init container',
      (pod) => void pod.spec!.initContainers!.push({ name: 'x', image: 'y' }),
      'initContainers',
    ],
    [
      'an ephemeral container',
      (pod) => void (pod.spec!.ephemeralContainers = [{ name: 'x', image: 'y' }]),
      'ephemeral',
    ],
    ['another claim', (pod) => void (pod.spec!.volumes![0]!.persistentVolumeClaim = { claimName: 'other' }), 'volumes'],
    ['a hostPath volume', (pod) => void pod.spec!.volumes!.push({ name: 'h', hostPath: { path: '/' } }), 'volumes'],
    ['another account', (pod) => void (pod.spec!.serviceAccountName = 'runner-other'), 'ServiceAccount'],
  ])('is not adopted with %s', (_, change, expected) => {
    expect(differenceFromBuilt(changed(change), built())).toContain(expected);
  });
});
