// The proxy's authentication as a pure function of the header, the Sessions and the runner Pods:
// a credential holds only for a Pod that exists, runs and has the uid its password was derived with.
import { describe, expect, it } from 'vitest';
import { agentPassword, supervisorPassword } from '../../common/egress/credentials.ts';
import { authenticate, type PodView, type SessionView } from '../../egress/callers.ts';
import { basic } from './egress-client.ts';

const KEY = 'egress-callers-key-'.padEnd(48, 'x');
const RUNNERS = 'runners';
const sessions: Record<string, SessionView> = {
  s1: { phase: 'Working', podName: 'pod-a' },
  ended: { phase: 'Succeeded', podName: 'pod-a' },
  gone: { phase: 'Working', podName: 'pod-gone' },
  stopping: { phase: 'Working', podName: 'pod-stopping' },
};
const pods: Record<string, PodView> = {
  'pod-a': { uid: 'uid-a', done: false },
  'pod-done': { uid: 'uid-done', done: true },
  'pod-stopping': { uid: 'uid-stopping', done: true },
};
const context = {
  key: KEY,
  runnerNamespace: RUNNERS,
  sessions: { get: (name: string) => sessions[name], onChange: () => undefined },
  pods: { get: (name: string) => pods[name] },
};
const sup = (pod: string, uid: string) => supervisorPassword(KEY, RUNNERS, pod, uid);
const asSupervisor = (pod: string, uid: string) => basic(`runner.${pod}`, sup(pod, uid));
const asAgent = (session: string, pod: string, uid: string) =>
  basic(`agent.${session}`, agentPassword(sup(pod, uid), session));

describe('authenticate', () => {
  it.each([
    [
      'the supervisor of a running Pod',
      asSupervisor('pod-a', 'uid-a'),
      { kind: 'supervisor', pod: 'pod-a', uid: 'uid-a' },
    ],
    [
      'the agent of a live Session on it',
      asAgent('s1', 'pod-a', 'uid-a'),
      { kind: 'agent', session: 's1', pod: 'pod-a', uid: 'uid-a' },
    ],
    ['no header', undefined, undefined],
    ['a wrong password', basic('runner.pod-a', 'x'.repeat(43)), undefined],
    ['a supervisor password of another uid (an earlier Pod of that name)', asSupervisor('pod-a', 'uid-old'), undefined],
    ['an agent password from another uid', asAgent('s1', 'pod-a', 'uid-old'), undefined],
    ['the supervisor of a Pod that is gone', asSupervisor('pod-gone', 'uid-gone'), undefined],
    ['the supervisor of a Pod that has ended', asSupervisor('pod-done', 'uid-done'), undefined],
    ['the agent of a Session whose Pod is gone', asAgent('gone', 'pod-gone', 'uid-gone'), undefined],
    [
      'the agent of a Session whose Pod is being deleted',
      asAgent('stopping', 'pod-stopping', 'uid-stopping'),
      undefined,
    ],
    ['the agent of an ended Session', asAgent('ended', 'pod-a', 'uid-a'), undefined],
    ['the agent of another Pod', asAgent('s1', 'pod-done', 'uid-done'), undefined],
  ])('%s', (_name, header, expected) => {
    expect(authenticate(header, context)).toEqual(expected);
  });
});
