// End to end, live runners with a short keep-alive: a phone's commands share its live Pod until
// the keep-alive after the last of them runs out; then the Pod goes (the workspace stays) and the
// next command pays one cold start in a new Pod.
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { runnerName, workspaceName } from '../../common/session/names.ts';
import { eventually } from '../support/eventually.ts';
import { bindings, errorsLogged, say, useLiveStack } from '../support/live-runner.ts';

// Long beside the moment between a result and the next command's admission (about a second), so the
// commands sent right after each other bind warm even on a loaded machine.
const KEEP_ALIVE_SECONDS = 40;

const live = useLiveStack({ numbers: ['+14155550281'], keepAlive: `${KEEP_ALIVE_SECONDS}s` });

describe('end to end: the keep-alive of a live runner', () => {
  it('three commands share one Pod; it goes a keep-alive after the last; a fourth makes a new one', async () => {
    const { e2e, pods } = live;
    const phone = e2e.phone('+14155550281');
    const hash = e2e.stack.phoneHash(phone.number);
    for (const word of ['one', 'two', 'three']) await say(phone, word);
    const three = await live.sessionsOf(phone);
    const kept = runnerName(three[0]!.metadata.name!);
    expect(bindings(three)).toEqual([`Succeeded cold ${kept}`, `Succeeded warm ${kept}`, `Succeeded warm ${kept}`]);

    // Its deletion is asked for a keep-alive after the LAST Session bound to it ended, not after the first
    // (completionTime has whole seconds: one second of slack).
    const gone = await pods.gone(kept);
    const lastEnded = Date.parse(three[2]!.status!.completionTime!);
    expect(gone.deletingAt! + 1000).toBeGreaterThanOrEqual(lastEnded + KEEP_ALIVE_SECONDS * 1000);
    // Its processes had exited before the deletion; the node agent lets go of the run once it has reported the exit.
    const key = `${e2e.stack.runnerNamespace}/${kept}`;
    const left = e2e.stack.nodeAgent.processOf(key)?.child;
    expect(left === undefined || left.exitCode !== null || left.signalCode !== null).toBe(true);
    await eventually(() => expect(e2e.stack.nodeAgent.processOf(key)).toBeUndefined(), 30_000);
    // The workspace stays.
    const claim = await e2e.kubeConfig
      .makeApiClient(CoreV1Api)
      .readNamespacedPersistentVolumeClaim({ name: workspaceName(hash), namespace: e2e.stack.runnerNamespace });
    expect(claim.metadata?.deletionTimestamp).toBeUndefined();

    await say(phone, 'four');
    const fourth = (await live.sessionsOf(phone)).at(-1)!;
    const fresh = runnerName(fourth.metadata.name!);
    expect(bindings([fourth])).toEqual([`Succeeded cold ${fresh}`]);
    expect(pods.created(hash).map((p) => p.name)).toEqual([kept, fresh]);
    expect(pods.seen(fresh)!.deletingAt, "the fourth command's Pod is live in its turn").toBeUndefined();
    expect(errorsLogged(e2e)).toEqual([]);
  }, 300_000);
});
