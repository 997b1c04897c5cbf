import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { trimPod } from '../../controller/cache.ts';
import { startProblem } from '../../controller/start.ts';

const held = (status: V1Pod['status']): V1Pod => ({
  metadata: { name: 's-runner', namespace: 'runners', labels: { a: 'b' } },
  spec: { containers: [{ name: 'runner', image: 'tether-runner:1', env: [{ name: 'X', value: 'y'.repeat(1000) }] }] },
  status,
});

describe('the cached runner Pod', () => {
  it('drops the spec but keeps what a held-back start is explained from', () => {
    const cases: V1Pod[] = [
      held({
        phase: 'Pending',
        conditions: [
          { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes' },
          { type: 'Ready', status: 'False' },
        ],
      }),
      held({
        phase: 'Pending',
        initContainerStatuses: [
          {
            name: 'agent',
            image: 'registry.invalid/r:1',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: 'ErrImagePull', message: 'not found' } },
          },
        ],
      }),
      held({
        phase: 'Pending',
        containerStatuses: [
          {
            name: 'runner',
            image: 'registry.invalid/r:1',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: 'ImagePullBackOff' } },
          },
        ],
      }),
    ];
    for (const pod of cases) {
      const before = startProblem(structuredClone(pod));
      trimPod(pod);
      expect(pod.spec).toBeUndefined();
      expect(before).toBeDefined();
      expect(startProblem(pod)).toEqual(before);
    }
    expect(cases[0]!.status!.conditions!.map((c) => c.type)).toEqual(['PodScheduled']);
  });
});
