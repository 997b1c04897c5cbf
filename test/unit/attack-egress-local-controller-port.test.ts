// Attack (local stack): the stack denies its own ports to the agent under 127.0.0.1, [::1] and localhost
// only, on the ground that its listeners are bound to 127.0.0.1 (docs/security.md, "The local stack":
// "127.0.0.2 reaches none of them"). The controller's port is not: controller/main.ts listens on every
// interface. Loopback is not a blocked range locally, so the agent asks the phone about 127.0.0.2:<the
// controller's port>, and one tap on *allow* opens the stack's own port to it.
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { createApp } from '../../controller/app.ts';
import { loadConfig as loadEgressConfig } from '../../egress/config.ts';
import { decide, NO_GRANTS } from '../../egress/decide.ts';
import { parseConnectTarget } from '../../egress/target.ts';
import { egressEnv } from '../../local/egress.ts';

// As controller/main.ts starts it: `listen(port)`, no address.
const controller = createApp({ registry: new Registry(), ready: () => true }).listen(0);
afterAll(() => controller.close());
const controllerPort = async () => {
  if (!controller.listening) await new Promise((resolve) => controller.once('listening', resolve));
  return (controller.address() as AddressInfo).port;
};

describe("attack: the local stack's controller port under another loopback address", () => {
  it('stays closed to the agent after the phone allows 127.0.0.2:<port>', async () => {
    const port = await controllerPort();
    // The port answers there (the stack's other listeners, bound to 127.0.0.1, do not).
    const reached = await fetch(`http://127.0.0.2:${port}/healthz`).then((r) => r.text());
    expect(reached).toBe('ok');

    const { rules } = loadEgressConfig(
      egressEnv({
        kubeconfig: '/tmp/kubeconfig',
        namespace: 'tether',
        runnerNamespace: 'tether-runners',
        egress: { port: 3999, url: 'http://127.0.0.1:3999', key: 'k'.repeat(48) },
        repoHosts: '127.0.0.1:4001',
        supervisorUrls: ['http://127.0.0.1:4003'],
        ownPorts: [port],
      }),
    );
    const target = `127.0.0.2:${port}`;
    const asked = decide({
      caller: 'agent',
      target: parseConnectTarget(target),
      rules,
      grants: { ...NO_GRANTS, streamOpen: true },
      addresses: ['127.0.0.2'],
    });
    const afterAllow = decide({
      caller: 'agent',
      target: parseConnectTarget(target),
      rules,
      grants: { ...NO_GRANTS, streamOpen: true, session: [parseHostEntry(target)] },
      addresses: ['127.0.0.2'],
    });
    expect({ asked: asked.verdict, afterAllow: afterAllow.verdict }).toEqual({
      asked: 'refused',
      afterAllow: 'refused',
    });
  });
});
