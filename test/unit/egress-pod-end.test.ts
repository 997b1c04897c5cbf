// A runner Pod that ends loses its callers' open connections at once (egress/pod-connections.ts): a tunnel
// its supervisor or its agent opened before the Pod was deleted, finished or made again under its name is
// cut, not left open until it idles out — the credentials that opened it no longer hold.
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agent, startProxy, supervisor, type Harness } from './attack-egress-harness.ts';
import { connectThrough, destination, podUid, runnerPods } from './egress-client.ts';
import { PodConnections } from '../../egress/pod-connections.ts';
import { tracked, type ProxyDeps } from '../../egress/tunnel.ts';
import { parseHostEntry } from '../../common/egress/hosts.ts';

let dest: Awaited<ReturnType<typeof destination>>;
let proxy: Harness;

beforeAll(async () => {
  dest = await destination();
  const entry = [parseHostEntry(`127.0.0.1:${dest.port}`)];
  // Long idle: a tunnel that closes was cut, not idled out.
  proxy = await startProxy({
    rules: { allow: entry, supervisorAllow: entry },
    limits: { idleMs: 600_000 },
    table: {},
  });
});
afterAll(() => {
  proxy.close();
  dest.server.close();
});

/** A tunnel of `credential` to the destination, open. */
async function openTunnel(credential: string) {
  const { reply, socket } = await connectThrough(proxy.port, `127.0.0.1:${dest.port}`, credential);
  expect(reply.status).toBe(200);
  return socket;
}

describe("a runner Pod's end", () => {
  it("cuts its supervisor's and its agent's tunnels when the Pod is deleted, and no other Pod's", async () => {
    proxy.setSession('s1', { phase: 'Working', podName: 'pod-a' });
    proxy.setSession('s2', { phase: 'Working', podName: 'pod-b' });
    const [mine, agents, other] = await Promise.all([
      openTunnel(supervisor('pod-a')),
      openTunnel(agent('s1', 'pod-a')),
      openTunnel(supervisor('pod-b')),
    ]);
    const cut = Promise.all([once(mine, 'close'), once(agents, 'close')]);
    proxy.pods.set('pod-a', undefined);
    await cut;
    expect(other.destroyed).toBe(false);
    other.destroy();
  });

  it('cuts them when the Pod finishes, and when another Pod of its name replaces it', async () => {
    const finished = await openTunnel(supervisor('pod-c'));
    const closed = once(finished, 'close');
    proxy.pods.set('pod-c', { uid: podUid('pod-c'), done: true });
    await closed;

    proxy.pods.set('pod-d', { uid: podUid('pod-d'), done: false });
    const replaced = await openTunnel(supervisor('pod-d'));
    const gone = once(replaced, 'close');
    proxy.pods.set('pod-d', { uid: 'another-uid', done: false });
    await gone;
  });
});

describe('a connection admitted while its Pod ended (a lookup, a wait for the phone)', () => {
  it('is closed as it opens, not tracked', () => {
    const pods = runnerPods();
    const deps = { credentials: { pods }, podConnections: new PodConnections() } as unknown as ProxyDeps;
    const closed: string[] = [];
    const connection = (name: string) => ({ destroy: () => void closed.push(name) });
    tracked(deps, { kind: 'supervisor', pod: 'pod-e', uid: podUid('pod-e') }, connection('running'));
    pods.set('pod-e', undefined);
    tracked(deps, { kind: 'supervisor', pod: 'pod-e', uid: podUid('pod-e') }, connection('after the delete'));
    pods.set('pod-e', { uid: 'the next one', done: false });
    tracked(deps, { kind: 'supervisor', pod: 'pod-e', uid: podUid('pod-e') }, connection('under the next uid'));
    expect(closed).toEqual(['after the delete', 'under the next uid']);
    expect(deps.podConnections.openCount('pod-e')).toBe(1);
  });
});
