// Attack: resource bounds shared by every Session. The proxy caps its open client connections for
// all callers together (TETHER_EGRESS_MAX_CONNECTIONS) and waiting ones per Session, but not open
// tunnels per Session: one agent holding tunnels to a host it may reach (kept alive by a byte now
// and then) takes every slot, and another Session's agent — or a supervisor pushing after review —
// is cut off. And a waiting connection whose client went away keeps its Session's waiting slot.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { agent, startProxy, supervisor, type Harness } from './attack-egress-harness.ts';
import { connectThrough, destination, openEvents } from './egress-client.ts';

const CAP = 12;
let proxy: Harness;
let dest: Awaited<ReturnType<typeof destination>>;
const held: Socket[] = [];

beforeAll(async () => {
  dest = await destination();
  proxy = await startProxy({
    rules: {
      allow: [parseHostEntry(`127.0.0.1:${dest.port}`)],
      supervisorAllow: [parseHostEntry(`127.0.0.1:${dest.port}`)],
    },
    limits: { maxConnections: CAP, maxWaitingPerSession: 2 },
    table: {},
  });
  proxy.setSession('greedy', { phase: 'Working', podName: 'pod-a' });
  proxy.setSession('other', { phase: 'Working', podName: 'pod-b' });
});
afterAll(() => {
  for (const s of held) s.destroy();
  proxy.close();
  dest.server.close();
});

describe('one Session cannot take the proxy from the others', () => {
  it("another Session's agent and supervisor still get through while one agent holds tunnels", async () => {
    for (let i = 0; i < CAP; i++) {
      const { reply, socket } = await connectThrough(proxy.port, `127.0.0.1:${dest.port}`, agent('greedy', 'pod-a'));
      if (reply.status !== 200) break;
      held.push(socket);
    }
    expect(held.length).toBeGreaterThan(0);
    const theirs = await connectThrough(proxy.port, `127.0.0.1:${dest.port}`, agent('other', 'pod-b'));
    theirs.socket.destroy();
    const push = await connectThrough(proxy.port, `127.0.0.1:${dest.port}`, supervisor('pod-b'));
    push.socket.destroy();
    expect([theirs.reply.status, push.reply.status]).toEqual([200, 200]);
  });
});

/** A CONNECT that waits for the phone, on a socket the test can hang up. */
function waitingConnect(port: number, target: string, auth: string): Socket {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${auth}\r\n\r\n`);
  return socket;
}

describe('a waiting connection whose client left', () => {
  it('gives its waiting slot back: the next host is asked about, not refused as too many', async () => {
    const proxy = await startProxy({
      limits: { maxWaitingPerSession: 2 },
      table: { 'a.example': ['203.0.113.1'], 'b.example': ['203.0.113.2'], 'c.example': ['203.0.113.3'] },
    });
    onTestFinished(() => proxy.close());
    proxy.setSession('s3', { phase: 'Working', podName: 'pod-c' });
    const events = await openEvents(proxy.port, 's3', supervisor('pod-c'));
    const first = waitingConnect(proxy.port, 'a.example:443', agent('s3', 'pod-c'));
    await events.next('ask');
    const second = waitingConnect(proxy.port, 'b.example:443', agent('s3', 'pod-c'));
    await events.next('ask', events.events.findIndex((e) => e.type === 'ask') + 1);
    await Promise.all([first, second].map((s) => new Promise((r) => (s.once('close', r), s.destroy()))));
    // Asked about, the third waits for the phone: the stream closed ends its wait (no answer comes).
    const third = connectThrough(proxy.port, 'c.example:443', agent('s3', 'pod-c'));
    const asked = await Promise.race([
      events.next('ask', events.events.findIndex((e) => e.type === 'ask' && e.host === 'b.example') + 1),
      third.then(() => undefined),
    ]);
    events.close();
    expect((await third).reply.body).not.toContain('too many connections');
    expect(asked).toMatchObject({ host: 'c.example', port: 443 });
  });
});
