// The bounds of egress/slots.ts on the real server: unauthenticated connections are a small share (past
// it the oldest is closed, so a client that shows its credential at once still gets in); a supervisor's
// open connections have a cap of their own, and a refusal past it says so.
import type { Socket } from 'node:net';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { parseHostEntry } from '../../common/egress/hosts.ts';
import { agent, startProxy, supervisor } from './attack-egress-harness.ts';
import { connectThrough, destination } from './egress-client.ts';

let dest: Awaited<ReturnType<typeof destination>>;
beforeAll(async () => {
  dest = await destination();
});
afterAll(() => dest.server.close());

const opened = (socket: Socket) => new Promise((r) => socket.once('connect', r));

describe('unauthenticated connections', () => {
  it('past their share, the oldest is closed and a credentialed client still gets its tunnel', async () => {
    const proxy = await startProxy({
      rules: { allow: [parseHostEntry(`127.0.0.1:${dest.port}`)] },
      limits: { maxUnauthenticated: 2 },
      table: {},
    });
    proxy.setSession('s1', { phase: 'Working', podName: 'pod-a' });
    const bare = [connect(proxy.port, '127.0.0.1'), connect(proxy.port, '127.0.0.1')];
    onTestFinished(() => (bare.forEach((s) => s.destroy()), proxy.close()));
    const oldestClosed = new Promise((r) => bare[0]!.once('close', r));
    await Promise.all(bare.map(opened));
    const tunnel = await connectThrough(proxy.port, `127.0.0.1:${dest.port}`, agent('s1', 'pod-a'));
    tunnel.socket.destroy();
    expect(tunnel.reply.status).toBe(200);
    await oldestClosed;
    expect(bare[1]!.destroyed).toBe(false);
  });
});

describe("a supervisor's connections", () => {
  it('are capped per runner Pod, with a reason', async () => {
    const proxy = await startProxy({
      rules: { supervisorAllow: [parseHostEntry(`127.0.0.1:${dest.port}`)] },
      limits: { maxConnectionsPerSupervisor: 2 },
      table: {},
    });
    const held: Socket[] = [];
    onTestFinished(() => (held.forEach((s) => s.destroy()), proxy.close()));
    for (let i = 0; i < 2; i++) {
      const { reply, socket } = await connectThrough(proxy.port, `127.0.0.1:${dest.port}`, supervisor('pod-a'));
      expect(reply.status).toBe(200);
      held.push(socket);
    }
    const third = await connectThrough(proxy.port, `127.0.0.1:${dest.port}`, supervisor('pod-a'));
    expect(third.reply.status).toBe(403);
    expect(third.reply.body).toContain("this runner Pod's supervisor already has 2 connections open");
    const otherPod = await connectThrough(proxy.port, `127.0.0.1:${dest.port}`, supervisor('pod-b'));
    otherPod.socket.destroy();
    expect(otherPod.reply.status).toBe(200);
  });
});
