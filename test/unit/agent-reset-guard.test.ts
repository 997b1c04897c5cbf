// Who the channel lets back in after a reset: the agent host that answered the reset re-executes and
// connects again with the reset's nonce; a connection without it — a process of the agent's that
// outlived the freeze, racing for the socket — closes the channel instead. Stand-in agent hosts
// speak the protocol on raw sockets, so each order of events is made on purpose.
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentChannel } from '../../runner-image/agent-channel/channel.ts';
import {
  FROM_SUPERVISOR,
  FrameDecoder,
  FrameType,
  PROTOCOL_VERSION,
  encodeFrame,
  type Frame,
} from '../../runner-image/agent-host/protocol.ts';
import { capturedLogger, finished, request, socketFolder } from '../support/agent-channel.ts';

let channel: AgentChannel | undefined;
afterEach(async () => {
  await channel?.close();
  channel = undefined;
});

/** A stand-in agent host: says hello (with a nonce or not) and collects what the supervisor sends. */
async function standIn(socketPath: string, pid: number, resumes?: string) {
  const socket: Socket = await new Promise((resolve, reject) => {
    const s = connect(socketPath, () => resolve(s));
    s.once('error', reject);
  });
  socket.on('error', () => undefined);
  const frames: Frame[] = [];
  const decoder = new FrameDecoder(FROM_SUPERVISOR);
  socket.on('data', (chunk: Buffer) => frames.push(...decoder.push(chunk)));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const hello = { protocol: PROTOCOL_VERSION, pid, freeze: 'namespace', startedAt: Date.now() };
  socket.write(encodeFrame(FrameType.Hello, 0, resumes ? { ...hello, resumes } : hello));
  const next = async (type: number): Promise<Frame> => {
    for (;;) {
      const found = frames.find((f) => f.type === type);
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  return { socket, next, closed };
}

async function listen() {
  const log = capturedLogger('runner');
  const socketPath = join(socketFolder(), 'supervisor', 'agent.sock');
  channel = await AgentChannel.listen({ socketPath, log: log.log, connectTimeoutMs: 10_000, freezeTimeoutMs: 5000 });
  return { socketPath, log };
}

const DONE = { mode: 'namespace', killed: 3, lingering: 0, removed: 2 };

/** The first stand-in answers the reset; returns the reset's promise and its nonce. */
async function answeredReset(socketPath: string, closeOld: boolean) {
  const old = await standIn(socketPath, 7);
  await channel!.connected();
  const reset = channel!.reset();
  const asked = await old.next(FrameType.Reset);
  const nonce = asked.type === FrameType.Reset ? asked.message.nonce : '';
  old.socket.write(encodeFrame(FrameType.ResetDone, asked.id, DONE));
  if (closeOld) old.socket.end();
  return { reset, nonce, old };
}

describe('agent channel: who comes back after a reset', { timeout: 30_000 }, () => {
  it("lets in the agent host holding the reset's nonce, which then gets the next spawn", async () => {
    const { socketPath } = await listen();
    const { reset, nonce } = await answeredReset(socketPath, true);
    const again = await standIn(socketPath, 7, nonce);
    await expect(reset).resolves.toMatchObject({ ...DONE, pid: 7 });
    void channel!.spawn(request('true', []));
    expect(await again.next(FrameType.Spawn)).toMatchObject({ message: { command: 'true' } });
  });

  it('lets it in even before the old connection has been seen to end', async () => {
    const { socketPath } = await listen();
    const { reset, nonce, old } = await answeredReset(socketPath, false);
    await standIn(socketPath, 8, nonce);
    await expect(reset).resolves.toMatchObject({ pid: 8 });
    await old.closed; // the supervisor closed the old one
  });

  it('closes the channel when another connection comes first, with no nonce or a wrong one', async () => {
    for (const resumes of [undefined, 'f'.repeat(64)]) {
      const { socketPath, log } = await listen();
      const { reset } = await answeredReset(socketPath, true);
      const impostor = await standIn(socketPath, 9, resumes);
      await expect(reset).rejects.toThrow(
        "agent channel closed: a process other than the re-exec'd agent host connected after the reset",
      );
      await impostor.closed;
      expect((await finished(channel!.spawn(request('true', [])))).error?.message).toContain('agent channel closed');
      expect(log.messages()).toContain(
        "agent channel closed a process other than the re-exec'd agent host connected after the reset",
      );
      await channel!.close();
    }
  });

  it('refuses a second connection while no reset is answered, and a hello resuming a reset never asked', async () => {
    const { socketPath, log } = await listen();
    const first = await standIn(socketPath, 7);
    await channel!.connected();
    const reset = channel!.reset();
    const intruder = await standIn(socketPath, 9, 'a'.repeat(64));
    expect(await intruder.next(FrameType.Refused)).toBeDefined();
    await first.next(FrameType.Reset);
    first.socket.destroy();
    await expect(reset).rejects.toThrow(/^agent channel closed: the (connection to the )?agent host/);
    expect(log.messages()).toContain('refused a second connection on the agent socket ');
    await channel!.close();

    const other = await listen();
    const unasked = await standIn(other.socketPath, 7, 'a'.repeat(64));
    await unasked.closed;
    expect(other.log.messages()).toContain(
      'agent channel closed malformed frame: a hello resuming a reset that was not asked',
    );
  });
});
