// End to end, live runners with a short keep-alive: a phone's commands share its live Pod until
// the keep-alive after the last of them runs out; then the Pod goes (the workspace stays) and the
// next command pays one cold start in a new Pod.
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerName, workspaceName } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { startE2E, type E2E, type Phone } from '../support/e2e.ts';
import { watchRunnerPods, type RunnerPods } from '../support/runner-pods.ts';

// Long beside the moment between a result and the next command's admission (about a second), so the
// commands sent right after each other bind warm even on a loaded machine.
const KEEP_ALIVE_SECONDS = 40;

let e2e: E2E;
let pods: RunnerPods;
beforeAll(async () => {
  e2e = await startE2E({ numbers: ['+14155550281'], keepAlive: `${KEEP_ALIVE_SECONDS}s` });
  pods = await watchRunnerPods(e2e);
}, 90_000);
afterAll(async () => {
  pods?.stop();
  await e2e?.stop();
});

const mine = async (phone: Phone) => (await e2e.list()).filter((s) => s.spec.phone === phone.number);
const bindings = (sessions: Session[]) => sessions.map((s) => `${s.status?.runnerStart} ${s.status?.podName}`);

async function say(phone: Phone, word: string): Promise<void> {
  await phone.send(`script:\nsay: ${word} done`);
  await phone.next(new RegExp(`^${word} done$`, 'm'));
}

describe('end to end: the keep-alive of a live runner', () => {
  it('three commands share one Pod; it goes a keep-alive after the last; a fourth makes a new one', async () => {
    const phone = e2e.phone('+14155550281');
    const hash = e2e.stack.phoneHash(phone.number);
    for (const word of ['one', 'two', 'three']) await say(phone, word);
    const three = await mine(phone);
    const live = runnerName(three[0]!.metadata.name!);
    expect(bindings(three)).toEqual([`cold ${live}`, `warm ${live}`, `warm ${live}`]);

    // Its deletion is asked for a keep-alive after the LAST Session bound to it ended (completionTime has
    // whole seconds), not after the first.
    const gone = await pods.gone(live);
    const lastEnded = Date.parse(three[2]!.status!.completionTime!);
    expect(gone.deletingAt! + 1000).toBeGreaterThanOrEqual(lastEnded + KEEP_ALIVE_SECONDS * 1000);
    expect(e2e.stack.nodeAgent.processOf(`${e2e.stack.runnerNamespace}/${live}`)).toBeUndefined();
    // The workspace stays.
    const core = e2e.kubeConfig.makeApiClient(CoreV1Api);
    const claim = await core.readNamespacedPersistentVolumeClaim({
      name: workspaceName(hash),
      namespace: e2e.stack.runnerNamespace,
    });
    expect(claim.metadata?.deletionTimestamp).toBeUndefined();

    await say(phone, 'four');
    const fourth = (await mine(phone)).at(-1)!;
    const fresh = runnerName(fourth.metadata.name!);
    expect(bindings([fourth])).toEqual([`cold ${fresh}`]);
    expect(fourth.status?.phase).toBe('Succeeded');
    expect(pods.created(hash).map((p) => p.name)).toEqual([live, fresh]);
    // The fourth command's Pod is live in its turn.
    expect(pods.seen(fresh)!.deletingAt).toBeUndefined();
  }, 300_000);
});
