// The proxy's view of a runner Pod (egress/pods.ts): its uid, and done once it ended or is going.
import { describe, expect, it } from 'vitest';
import { podViewOf } from '../../egress/pods.ts';

describe('podViewOf', () => {
  it.each([
    ['a Pending Pod', { metadata: { uid: 'u' }, status: { phase: 'Pending' } }, { uid: 'u', done: false }],
    ['a Running Pod', { metadata: { uid: 'u' }, status: { phase: 'Running' } }, { uid: 'u', done: false }],
    ['a Succeeded Pod', { metadata: { uid: 'u' }, status: { phase: 'Succeeded' } }, { uid: 'u', done: true }],
    ['a Failed Pod', { metadata: { uid: 'u' }, status: { phase: 'Failed' } }, { uid: 'u', done: true }],
    [
      'a Pod being deleted',
      { metadata: { uid: 'u', deletionTimestamp: new Date() }, status: { phase: 'Running' } },
      { uid: 'u', done: true },
    ],
    ['no Pod', undefined, undefined],
  ])('%s', (_name, pod, expected) => {
    expect(podViewOf(pod)).toEqual(expected);
  });
});
