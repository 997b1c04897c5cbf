// End to end on the local stack: a runner Pod lost mid-run — its runner process SIGKILLed, the Pod deleted, the Pod
// evicted through the Eviction API — is replaced once on the same workspace, the phone is told in one line, and the
// run ends well: a review still open is answered after the replacement. A second loss: e2e-restarts.test.ts.
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Session } from '../../common/session/schema.ts';
import { RESTART_LINE } from '../../runner-image/restart.ts';
import { startE2E, type E2E, type Phone } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';

let e2e: E2E;
let core: CoreV1Api;
beforeAll(async () => {
  e2e = await startE2E({ numbers: ['+14155550171', '+14155550172', '+14155550173'] });
  core = e2e.kubeConfig.makeApiClient(CoreV1Api);
}, 90_000);
afterAll(async () => e2e?.stop());

const latest = async (phone: string) => (await e2e.list()).filter((s) => s.spec.phone === phone).at(-1)!;
const WORK = 'script:\nprogress: before the loss\nsleep: 4000\nwrite: lost.txt = still here\nsay: done after the loss';

type Loss = (session: Session) => Promise<void>;
const namespace = () => e2e.stack.runnerNamespace;

const sigkill: Loss = async (session) => {
  e2e.stack.nodeAgent.processOf(`${namespace()}/${session.status!.podName}`)!.signal('SIGKILL');
};
const podDelete: Loss = async (session) => {
  await core.deleteNamespacedPod({ name: session.status!.podName!, namespace: namespace() });
};
const eviction: Loss = async (session) => {
  const name = session.status!.podName!;
  await core.createNamespacedPodEviction({
    name,
    namespace: namespace(),
    body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: namespace() } },
  });
};

/** The replacement took the run: a new Pod named in status, the phone told once. */
async function replaced(phone: Phone, lost: string): Promise<Session> {
  await phone.next(new RegExp(RESTART_LINE.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return eventually(async () => {
    const session = await latest(phone.number);
    expect(session.status).toMatchObject({ runnerRestarts: 1, podName: `${session.metadata.name}-runner-1` });
    expect(session.status?.podName).not.toBe(lost);
    return session;
  });
}

async function endsWell(phone: Phone): Promise<void> {
  await phone.next(/Reply \*approve\*/);
  await phone.send('approve');
  await phone.next(/Pull request opened/);
  const done = await eventually(async () => {
    const session = await latest(phone.number);
    expect(session.status?.phase).toBe('Succeeded');
    return session;
  });
  expect(e2e.github.pulls.filter((p) => p.head === `tether/${done.metadata.name}`)).toHaveLength(1);
  expect(phone.received().filter((m) => m.body.includes(RESTART_LINE))).toHaveLength(1);
}

describe('end to end: a runner Pod lost mid-run', { timeout: 240_000 }, () => {
  it.each([
    ['its runner process SIGKILLed', '+14155550171', sigkill],
    ['the Pod deleted', '+14155550172', podDelete],
  ] as const)('Working, %s: replaced once, the phone told, the run ends well', async (_what, number, lose) => {
    const phone = e2e.phone(number);
    await phone.send(WORK);
    await phone.next(/before the loss/);
    const session = await latest(number);
    await lose(session);
    await replaced(phone, session.status!.podName!);
    await endsWell(phone);
  });

  it('AwaitingApproval, the Pod evicted: the review stays open and its approve publishes', async () => {
    const phone = e2e.phone('+14155550173');
    await phone.send('script:\nwrite: evicted.txt = reviewed\nsay: wrote it');
    await phone.next(/Reply \*approve\*/);
    const session = await latest(phone.number);
    const pending = session.status!.pending!;
    await eviction(session);
    const taken = await replaced(phone, session.status!.podName!);
    expect(taken.status?.pending).toEqual(pending);
    expect(taken.status?.phase).toBe('AwaitingApproval');
    await phone.send('approve');
    await phone.next(/Pull request opened/);
    const done = await eventually(async () => {
      const found = await latest(phone.number);
      expect(found.status?.phase).toBe('Succeeded');
      return found;
    });
    expect(done.spec.decisions?.map((d) => d.requestId)).toEqual([pending.id]);
    expect(phone.received().filter((m) => m.body.includes(RESTART_LINE))).toHaveLength(1);
  });
});
