// Fault suite: the API server paused (SIGSTOP) for 30 s mid-session. The run's shared control plane
// serves other test files, so this file starts a second kube-apiserver on the same etcd (as in an
// HA control plane) and points the whole stack — relay, controller, node agent, runner Pods — at it,
// then pauses that one. A command sent during the pause is either acted on late or answered with
// one "didn't go through"; after SIGCONT every component recovers by itself within 60 s (the run
// in progress finishes, a new command goes through relay, controller, node agent and runner),
// and the phone gets nothing else: no error, no repeated message.
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startExtraApiServer, type ExtraApiServer } from '../../local/control-plane/control-plane.ts';
import { relayCaughtUp } from '../support/caught-up.ts';
import { startE2E, type E2E } from '../support/e2e.ts';

const PAUSE_MS = 30_000;
const RECOVERY_MS = 60_000;
const NUMBER = '+14155550191';

let second: ExtraApiServer;
let e2e: E2E;
beforeAll(async () => {
  const started = Date.now();
  second = await startExtraApiServer(dirname(inject('kubeconfig')));
  console.log(`[apiserver-pause] second kube-apiserver ready in ${Date.now() - started} ms`);
  e2e = await startE2E({ kubeconfig: second.kubeconfig, numbers: [NUMBER] });
}, 150_000);
afterAll(async () => {
  second?.proc.signal('SIGCONT');
  await e2e?.stop();
  await second?.stop();
});

describe('fault suite: API server paused', () => {
  it(`30 s of SIGSTOP mid-session: everything recovers within 60 s of SIGCONT, at most one "send again" per lost \
command`, async () => {
    const phone = e2e.phone(NUMBER);
    await phone.send(
      'script:\nprogress: before the pause\nsleep: 12000\nprogress: through the pause\nsay: the first run finished',
    );
    await phone.next(/before the pause/, 60_000);

    second.proc.signal('SIGSTOP');
    const pausedAt = Date.now();
    // A command while the API server is paused: the relay acknowledges it, its claim waits.
    const during = phone.send('status');
    await new Promise((r) => setTimeout(r, PAUSE_MS));
    second.proc.signal('SIGCONT');
    const resumedAt = Date.now();
    console.log(`[apiserver-pause] paused ${resumedAt - pausedAt} ms`);

    await during;
    await phone.next(/the first run finished/, RECOVERY_MS);
    const firstRunBackMs = Date.now() - resumedAt;
    await phone.send('script:\nsay: a new command after the pause');
    await phone.next(/a new command after the pause/, RECOVERY_MS - (Date.now() - resumedAt));
    const recoveredMs = Date.now() - resumedAt;
    console.log(
      `[apiserver-pause] after SIGCONT: the paused run finished in ${firstRunBackMs} ms, a new command completed in ` +
        `${recoveredMs} ms`,
    );
    expect(recoveredMs).toBeLessThan(RECOVERY_MS);

    const answer = await relayCaughtUp(e2e, phone);
    const bodies = phone
      .received()
      .filter((m) => m !== answer)
      .map((m) => m.body);
    const sendAgain = bodies.filter((b) => /didn't go through/.test(b));
    console.log(
      `[apiserver-pause] the phone got ${bodies.length} messages (${sendAgain.length} "send again"):\n` +
        bodies.map((b) => `  ${b.split('\n')[0]}`).join('\n'),
    );
    expect(sendAgain.length, 'at most one "send again" for the one command sent during the pause').toBeLessThanOrEqual(
      1,
    );
    expect(
      bodies.filter((b) => /❌|error/i.test(b)),
      'no failure reaches the phone',
    ).toEqual([]);
    const progress = bodies.filter((b) => !/didn't go through/.test(b));
    expect(progress, 'no message twice').toEqual([...new Set(progress)]);
  }, 240_000);
});
