// The order of docs/egress.md on the real server: an unlisted name is asked about without a lookup; once
// the phone allows it, it is looked up once and its addresses checked — a blocked range or the forge's
// address and port still refuse it, whatever the phone said.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { agent, startProxy, supervisor, type Harness } from './attack-egress-harness.ts';
import { answer, connectThrough, destination, openEvents, overTunnel, type EventsClient } from './egress-client.ts';

let dest: Awaited<ReturnType<typeof destination>>;
let proxy: Harness;
let events: EventsClient;

beforeAll(async () => {
  dest = await destination();
  proxy = await startProxy({
    rules: {
      forgeHosts: [{ host: '127.0.0.1', port: dest.port + 1 }],
      deny: [parseHostEntry(`127.0.0.1:${dest.port + 2}`)],
    },
    table: {
      'fresh.example': ['127.0.0.1'],
      'inner.example': ['10.1.1.1'],
      'alias.example': ['127.0.0.1'],
      'own-port.example': ['127.0.0.1'],
    },
  });
  proxy.setSession('s1', { phase: 'Working', podName: 'pod-a' });
  events = await openEvents(proxy.port, 's1', supervisor('pod-a'));
});
afterAll(() => {
  events.close();
  proxy.close();
  dest.server.close();
});

/** CONNECT target, answered from the phone with `session` once its ask arrives. */
async function allowedFromThePhone(target: string) {
  const asked = events.events.length;
  const tunnel = connectThrough(proxy.port, target, agent('s1', 'pod-a'));
  const ask = await events.next('ask', asked);
  const lookedUpBeforeTheAnswer = [...proxy.resolved];
  expect(await answer(proxy.port, 's1', supervisor('pod-a'), ask.id, 'session')).toBe(204);
  return { tunnel: await tunnel, lookedUpBeforeTheAnswer };
}

describe('a name the phone is asked about', () => {
  it('is looked up only after the phone allowed it, once, and reached at the checked address', async () => {
    const { tunnel, lookedUpBeforeTheAnswer } = await allowedFromThePhone(`fresh.example:${dest.port}`);
    expect(lookedUpBeforeTheAnswer).not.toContain('fresh.example');
    expect(tunnel.reply.status).toBe(200);
    expect((await overTunnel(tunnel.socket, '/fresh')).body).toBe('reached /fresh');
    expect(proxy.resolved.filter((n) => n === 'fresh.example')).toEqual(['fresh.example']);
  });

  it('is refused after the phone allowed it when it resolves into a blocked range', async () => {
    const { tunnel } = await allowedFromThePhone('inner.example:443');
    expect(tunnel.reply.status).toBe(403);
    expect(tunnel.reply.body).toContain('resolves to 10.1.1.1, in a range this install keeps closed');
  });

  it("is the forge when it resolves to the forge's address and port: no tunnel, whatever the phone said", async () => {
    const { tunnel } = await allowedFromThePhone(`alias.example:${dest.port + 1}`);
    expect(tunnel.reply.status).toBe(403);
    expect(tunnel.reply.body).toContain('no route to push');
  });

  it('is refused after the phone allowed it when it resolves to an address and port the install denies', async () => {
    const { tunnel } = await allowedFromThePhone(`own-port.example:${dest.port + 2}`);
    expect(tunnel.reply.status).toBe(403);
    expect(tunnel.reply.body).toContain(`resolves to 127.0.0.1, denied by this install`);
  });
});

describe('another spelling of an address the install denies', () => {
  it('is refused without asking the phone', async () => {
    const asked = events.events.filter((e) => e.type === 'ask').length;
    const tunnel = await connectThrough(proxy.port, `[::ffff:7f00:1]:${dest.port + 2}`, agent('s1', 'pod-a'));
    expect(tunnel.reply.status).toBe(403);
    expect(tunnel.reply.body).toContain('resolves to ::ffff:7f00:1, denied by this install');
    expect(events.events.filter((e) => e.type === 'ask').length).toBe(asked);
  });
});
