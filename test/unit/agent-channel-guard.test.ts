// What the agent channel lets through and what it refuses: one agent host per supervisor, malformed
// frames from either side, credentials in the agent host's environment, and (as root) an agent host
// under another uid that cannot read the supervisor's files or process.
import { chmodSync, existsSync, lstatSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentChannel } from '../../runner-image/agent-channel/channel.ts';
import { FrameType, MAX_FRAME_BYTES, PROTOCOL_VERSION, encodeFrame } from '../../runner-image/agent-host/protocol.ts';
import { eventually } from '../support/eventually.ts';
import {
  capturedLogger,
  finished,
  request,
  socketFolder,
  startAgentHost,
  startPair,
  type Pair,
} from '../support/agent-channel.ts';

let pair: Pair | undefined;
afterEach(async () => {
  await pair?.stop();
  pair = undefined;
}, 30_000);

const frame = (length: number, type: number, body = Buffer.alloc(0)) => {
  const header = Buffer.alloc(9);
  header.writeUInt32BE(length, 0);
  header.writeUInt8(type, 4);
  return Buffer.concat([header, body]);
};
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const hello = encodeFrame(FrameType.Hello, 0, { protocol: PROTOCOL_VERSION, pid: 42, freeze: 'groups', startedAt: 1 });

function connectRaw(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path, () => resolve(socket));
    socket.once('error', reject);
  });
}

describe('agent channel: one agent host per supervisor', { timeout: 30_000 }, () => {
  it('refuses and logs a second connection; the first keeps working', async () => {
    pair = await startPair();
    const intruder = startAgentHost({ socketPath: pair.socketPath });
    expect(await intruder.exited).toBe(1);
    expect(intruder.output()).toContain('the supervisor refused this agent host');
    expect(pair.supervisorLog.messages()).toContain('refused a second connection on the agent socket ');
    expect((await finished(pair.channel.spawn(request('echo', ['still here'])))).stdout.toString()).toBe(
      'still here\n',
    );
  });

  it('welcomes an agent host that connects the moment the socket exists', async () => {
    // The Pod's group may connect before the socket is opened to everyone: such a connection must
    // not arrive before the channel listens for it (it would hang the agent host, unanswered).
    for (let attempt = 0; attempt < 20; attempt++) {
      const socketPath = join(socketFolder(), 'supervisor', 'agent.sock');
      let raw: Socket | undefined;
      const early = new Promise<void>((resolve, reject) => {
        const poll = () => {
          if (!existsSync(socketPath)) return void setImmediate(poll);
          raw = connect(socketPath, () => resolve());
          raw.once('error', reject);
          raw.write(hello);
        };
        poll();
      });
      const channel = await AgentChannel.listen({
        socketPath,
        log: capturedLogger('runner').log,
        connectTimeoutMs: 2000,
        freezeTimeoutMs: 1000,
      });
      await early;
      expect((await channel.connected()).pid).toBe(42);
      raw!.destroy();
      await channel.close();
    }
  });

  it('creates the socket folder 0755 and refuses a folder someone else could write', async () => {
    pair = await startPair();
    expect(statSync(dirname(pair.socketPath)).mode & 0o777).toBe(0o755);
    expect(lstatSync(pair.socketPath).isSocket()).toBe(true);
    const open = join(socketFolder(), 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    await expect(
      AgentChannel.listen({
        socketPath: join(open, 'agent.sock'),
        log: capturedLogger('runner').log,
        connectTimeoutMs: 1000,
        freezeTimeoutMs: 1000,
      }),
    ).rejects.toThrow('that others cannot write (found uid');
  });

  it('the agent host refuses to start with a credential in its environment', async () => {
    const host = startAgentHost({ socketPath: '/nonexistent/agent.sock', env: { GITHUB_TOKEN: 'ghp_canary' } });
    expect(await host.exited).toBe(2);
    expect(host.output()).toContain('the agent container must hold no credential, but GITHUB_TOKEN is set');
  });
});

describe('agent channel: malformed frames from the agent side', { timeout: 30_000 }, () => {
  const cases: Array<[string, Buffer, string]> = [
    [
      'an oversized frame',
      frame(MAX_FRAME_BYTES + 1, FrameType.Hello),
      `frame length ${MAX_FRAME_BYTES + 1} is over the ${MAX_FRAME_BYTES}-byte limit`,
    ],
    ['a frame shorter than its header', frame(2, FrameType.Hello), 'frame length 2 is shorter than a header'],
    ['an unknown frame type', frame(5 + 2, 99, json({})), 'unexpected frame type 99'],
    [
      'a supervisor-only frame type',
      encodeFrame(FrameType.Spawn, 1, { command: 'x', args: [], env: {} }),
      `unexpected frame type ${FrameType.Spawn}`,
    ],
    [
      'a payload that is not JSON',
      frame(5 + 3, FrameType.Hello, Buffer.from('{{{')),
      `frame type ${FrameType.Hello}: payload is not JSON`,
    ],
    [
      'a hello missing a field',
      encodeFrame(FrameType.Hello, 0, { protocol: 1, pid: 1 }),
      `frame type ${FrameType.Hello}: /freeze`,
    ],
    [
      'output before the hello',
      encodeFrame(FrameType.Stdout, 1, Buffer.from('x')),
      `frame type ${FrameType.Stdout} before the hello`,
    ],
    [
      'a process id never spawned',
      Buffer.concat([hello, encodeFrame(FrameType.Exit, 7, { code: 0, signal: null })]),
      `frame type ${FrameType.Exit} for unknown process 7`,
    ],
  ];
  it.each(cases)(
    '%s closes the connection with the reason logged, and the slot stays used',
    async (_name, bytes, reason) => {
      const log = capturedLogger('runner');
      const socketPath = join(socketFolder(), 'supervisor', 'agent.sock');
      const channel = await AgentChannel.listen({
        socketPath,
        log: log.log,
        connectTimeoutMs: 10_000,
        freezeTimeoutMs: 1000,
      });
      const raw = await connectRaw(socketPath);
      const closed = new Promise((resolve) => raw.once('close', resolve));
      raw.on('error', () => undefined);
      raw.resume();
      raw.write(bytes);
      await closed;
      expect(log.lines.find((l) => l.msg === 'agent channel closed')?.reason).toMatch(
        new RegExp(`^malformed frame: ${escape(reason)}`),
      );
      expect(log.lines.find((l) => l.msg === 'malformed frame on the agent channel')).toBeDefined();
      expect((await finished(channel.spawn(request('true', [])))).error?.message).toContain(
        'agent channel closed: malformed frame',
      );
      const late = startAgentHost({ socketPath });
      expect(await late.exited).toBe(1);
      await channel.close();
    },
  );
});

describe('agent channel: malformed frames from the supervisor side', { timeout: 30_000 }, () => {
  /** A stand-in supervisor that welcomes the agent host, then sends `bytes`. */
  async function hostAfter(bytes: Buffer): Promise<{ code: number | null; output: string }> {
    const socketPath = join(socketFolder(), 'agent.sock');
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => socket.write(Buffer.concat([encodeFrame(FrameType.Welcome, 0, {}), bytes])));
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const host = startAgentHost({ socketPath });
    const code = await host.exited;
    server.close();
    return { code, output: host.output() };
  }

  it.each([
    ['an unknown frame type', frame(5, 77), 'unexpected frame type 77'],
    [
      'an agent-only frame type',
      encodeFrame(FrameType.Stdout, 1, Buffer.from('x')),
      `unexpected frame type ${FrameType.Stdout}`,
    ],
    [
      'a spawn request with a bad field',
      encodeFrame(FrameType.Spawn, 1, { command: 'sh', args: 'not a list', env: {} }),
      `frame type ${FrameType.Spawn}: /args`,
    ],
    [
      'input for a process never spawned',
      encodeFrame(FrameType.Stdin, 3, Buffer.from('x')),
      `frame type ${FrameType.Stdin} for process 3, which was never spawned`,
    ],
    [
      'an unknown signal',
      Buffer.concat([
        encodeFrame(FrameType.Spawn, 1, { command: 'sleep', args: ['5'], env: {} }),
        encodeFrame(FrameType.Signal, 1, { signal: 'SIGNOPE' }),
      ]),
      'unknown signal SIGNOPE',
    ],
    [
      'a process id used twice',
      Buffer.concat([1, 1].map((id) => encodeFrame(FrameType.Spawn, id, { command: 'true', args: [], env: {} }))),
      'process id 1 was used before',
    ],
  ])('%s: the agent host logs why and exits 1', async (_name, bytes, reason) => {
    const { code, output } = await hostAfter(bytes);
    expect(code).toBe(1);
    expect(output).toContain('malformed frame on the agent channel');
    expect(output).toContain(`malformed frame: ${reason}`);
  });
});

describe.runIf(process.getuid?.() === 0)(
  'agent channel: the agent host under another uid (root only)',
  { timeout: 30_000 },
  () => {
    it("runs the agent's processes as that uid, which cannot read the supervisor's files or environment", async () => {
      const dir = socketFolder();
      const secretFile = join(dir, 'credential');
      writeFileSync(secretFile, 'ghp_canary', { mode: 0o600 });
      pair = await startPair({ uid: 65534 });
      const id = await finished(pair.channel.spawn(request('id', ['-u'])));
      expect(id.stdout.toString().trim()).toBe('65534');
      const file = await finished(pair.channel.spawn(request('cat', [secretFile])));
      expect(file.code).toBe(1);
      expect(file.stderr).toContain('Permission denied');
      const environ = await finished(pair.channel.spawn(request('cat', [`/proc/${process.pid}/environ`])));
      expect(environ.code).toBe(1);
      expect(environ.stdout.length).toBe(0);
      const signal = await finished(pair.channel.spawn(request('kill', ['-0', String(process.pid)])));
      expect(signal.code).not.toBe(0);
      // The socket folder is the supervisor's: the agent's uid cannot replace the socket.
      const replace = await finished(pair.channel.spawn(request('rm', ['-f', pair.socketPath])));
      expect(replace.code).toBe(1);
      await eventually(() => expect(lstatSync(pair!.socketPath).isSocket()).toBe(true));
    });
  },
);
