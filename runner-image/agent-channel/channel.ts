// The supervisor's side of the channel to the agent container. It accepts exactly one agent host —
// the first to connect, which the agent container starts before any agent code exists — and refuses
// (and logs) every later connection. Through it the supervisor runs processes in the agent container
// (spawn() is what the Agent SDK's spawnClaudeCodeProcess needs), stops them all (freeze()), and
// between two Sessions resets the agent container (reset()): the one later connection it accepts is
// the re-exec'd agent host's, carrying the reset's nonce; any other then closes the channel.
// Claude Code: `spawnClaudeCodeProcess: (options) => channel.spawn(options)`.
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import type { SpawnOptions } from '@anthropic-ai/claude-agent-sdk';
import { FrameConnection } from '../agent-host/connection.ts';
import {
  FROM_AGENT,
  FrameType,
  PROTOCOL_VERSION,
  ProtocolError,
  REEXEC_CONNECT_MS,
  encodeFrame,
  type Frame,
  type FrameTypeValue,
  type MessageOf,
} from '../agent-host/protocol.ts';
import {
  carriedSecret,
  type AgentChannelOptions,
  type AgentHostHello,
  type FreezeReport,
  type ResetReport,
  type Waiter,
} from './options.ts';
import { AgentProcess, CHANNEL_LOST, NOT_STARTED } from './process.ts';
import { listenOnSocket, removeSocket } from './socket.ts';

export { AgentProcess } from './process.ts';
export {
  CHANNEL_DEFAULTS,
  type AgentChannelOptions,
  type AgentHostHello,
  type FreezeReport,
  type ResetReport,
} from './options.ts';

export class AgentChannel {
  private readonly options: AgentChannelOptions;
  private readonly server: Server;
  private conn: FrameConnection | undefined;
  private hello: AgentHostHello | undefined;
  private closedReason: string | undefined;
  private readonly connectTimer: NodeJS.Timeout;
  private readonly processes = new Map<number, AgentProcess>();
  private readonly queued: Array<() => void> = [];
  /** Connections after the first, closing. */
  private readonly refused = new Set<Socket>();
  private readonly helloWaiters: Array<Waiter<AgentHostHello>> = [];
  private readonly freezes = new Map<number, Waiter<FreezeReport> & { timer: NodeJS.Timeout }>();
  /** The reset under way; `done` once the agent host has answered and is re-executing. */
  private resetting:
    | (Waiter<ResetReport> & {
        seq: number;
        nonce: string;
        timer: NodeJS.Timeout;
        done?: FreezeReport & { removed: number };
      })
    | undefined;
  private nextId = 1;
  private nextFreeze = 1;

  /** Listens on options.socketPath (creating its folder) and waits for the agent host there. */
  static async listen(options: AgentChannelOptions): Promise<AgentChannel> {
    const channel = new AgentChannel(options, createServer());
    try {
      await listenOnSocket(options.socketPath, channel.server);
    } catch (error) {
      channel.shutDown(`the agent socket could not be opened: ${(error as Error).message}`);
      throw error;
    }
    options.log.info({ socket: options.socketPath }, 'waiting for the agent host');
    return channel;
  }

  private constructor(options: AgentChannelOptions, server: Server) {
    this.options = options;
    this.server = server;
    server.on('connection', (socket) => this.accept(socket));
    server.on('error', (error) => this.shutDown(`the agent socket failed: ${error.message}`));
    this.connectTimer = setTimeout(
      () => this.shutDown(`no agent host connected within ${options.connectTimeoutMs} ms`),
      options.connectTimeoutMs,
    );
  }

  /** Resolves with the agent host's hello once it is connected; rejects if the channel closes first. */
  connected(): Promise<AgentHostHello> {
    if (this.hello) return Promise.resolve(this.hello);
    if (this.closedReason) return Promise.reject(new Error(`agent channel closed: ${this.closedReason}`));
    return new Promise((resolve, reject) => this.helloWaiters.push({ resolve, reject }));
  }

  /**
   * Starts a process in the agent container. Failures (no channel, refused, not found) arrive as 'error' and 'exit'.
   */
  spawn(options: SpawnOptions): AgentProcess {
    const id = this.nextId++;
    const spawned = new AgentProcess((type, payload) => this.send(type, id, payload));
    const env = Object.fromEntries(
      Object.entries(options.env).filter((e): e is [string, string] => e[1] !== undefined),
    );
    const leak = carriedSecret(this.options.secrets?.() ?? [], options, env);
    const refusal = this.closedReason
      ? `agent channel closed: ${this.closedReason}`
      : leak && `refused: the spawn request carries a credential (${leak})`;
    if (refusal) {
      setImmediate(() => spawned.fail(new Error(refusal), refusal.startsWith('refused') ? NOT_STARTED : CHANNEL_LOST));
      return spawned;
    }
    this.processes.set(id, spawned);
    spawned.once('close', () => this.processes.delete(id)); // output may still arrive after the exit
    options.signal?.addEventListener('abort', () => spawned.kill('SIGKILL'), { once: true });
    this.send(FrameType.Spawn, id, {
      command: options.command,
      args: options.args,
      env,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    return spawned;
  }

  /** Kills every process of the agent container; resolves once the agent host reports them gone. Later spawns fail. */
  freeze(): Promise<FreezeReport> {
    if (this.closedReason) return Promise.reject(new Error(`agent channel closed: ${this.closedReason}`));
    const seq = this.nextFreeze++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.freezes.delete(seq);
        reject(new Error(`the agent host did not confirm the freeze within ${this.options.freezeTimeoutMs} ms`));
      }, this.options.freezeTimeoutMs);
      this.freezes.set(seq, { resolve, reject, timer });
      this.send(FrameType.Freeze, seq);
    });
  }

  /**
   * Between two Sessions: kills every process of the agent container, empties its temporary folder and
   * has the agent host re-exec itself; resolves once the new agent host is connected. A reset that
   * fails leaves the agent container frozen; one whose agent host does not come back closes the channel.
   */
  reset(): Promise<ResetReport> {
    if (this.closedReason) return Promise.reject(new Error(`agent channel closed: ${this.closedReason}`));
    if (this.resetting) return Promise.reject(new Error('a reset of the agent container is under way'));
    const seq = this.nextFreeze++;
    const nonce = randomBytes(32).toString('hex');
    const limitMs = this.options.freezeTimeoutMs + REEXEC_CONNECT_MS;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => this.shutDown(`the agent host did not come back from the reset within ${limitMs} ms`),
        limitMs,
      );
      this.resetting = { seq, nonce, timer, resolve, reject };
      this.send(FrameType.Reset, seq, { nonce });
    });
  }

  /** Stops listening and closes the connection (the agent host then kills its processes and exits). */
  async close(): Promise<void> {
    this.shutDown('the supervisor closed the channel');
    for (const socket of this.refused) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await removeSocket(this.options.socketPath);
  }

  private send(type: FrameTypeValue, id: number, payload: Buffer | object = {}): boolean {
    if (this.closedReason) return false;
    if (!this.hello) {
      this.queued.push(() => this.conn?.send(type, id, payload));
      return true;
    }
    return this.conn!.send(type, id, payload);
  }

  private accept(socket: Socket): void {
    socket.on('error', (error) => this.options.log.debug({ err: error }, 'agent socket connection error'));
    const reexecuted = this.resetting?.done !== undefined;
    if ((this.conn && !reexecuted) || this.closedReason) {
      this.options.log.warn({ socket: this.options.socketPath }, 'refused a second connection on the agent socket');
      this.refused.add(socket);
      socket.once('close', () => this.refused.delete(socket));
      socket.resume(); // read (and drop) what it sends, so its end is seen
      socket.end(encodeFrame(FrameType.Refused, 0, { reason: 'this supervisor already has its agent host' }));
      return;
    }
    clearTimeout(this.connectTimer);
    this.conn?.close('the agent host re-executed'); // its end may not have been read yet
    const conn: FrameConnection = new FrameConnection(socket, {
      peer: 'agent host',
      accepts: FROM_AGENT,
      log: this.options.log,
      onFrame: (frame) => this.receive(frame),
      onClosed: (reason) => this.lost(conn, reason),
    });
    this.conn = conn;
    this.hello = undefined;
  }

  /** A connection ended: the channel's end, unless it is the agent host's that re-executes for a reset. */
  private lost(conn: FrameConnection, reason: string): void {
    if (conn !== this.conn) return; // replaced by the re-exec'd agent host's
    if (this.resetting?.done) {
      this.conn = undefined;
      this.hello = undefined;
      return;
    }
    this.shutDown(reason);
  }

  private welcome(hello: AgentHostHello): void {
    if (hello.protocol !== PROTOCOL_VERSION)
      throw new ProtocolError(`agent host speaks protocol ${hello.protocol}, not ${PROTOCOL_VERSION}`);
    const reset = this.resetting;
    if (reset?.done) {
      if (hello.resumes !== reset.nonce)
        return this.shutDown("a process other than the re-exec'd agent host connected after the reset");
      this.resetting = undefined;
      clearTimeout(reset.timer);
      reset.resolve({ ...reset.done, pid: hello.pid, startedAt: hello.startedAt });
    } else if (hello.resumes !== undefined) throw new ProtocolError('a hello resuming a reset that was not asked');
    this.hello = hello;
    this.conn!.send(FrameType.Welcome, 0);
    this.options.log.info({ pid: hello.pid, freeze: hello.freeze }, 'agent host connected');
    for (const send of this.queued.splice(0)) send();
    for (const waiter of this.helloWaiters.splice(0)) waiter.resolve(hello);
  }

  private receive(frame: Frame): void {
    if (frame.type === FrameType.Hello) {
      if (this.hello) throw new ProtocolError('a second hello');
      return this.welcome(frame.message);
    }
    if (!this.hello) throw new ProtocolError(`frame type ${frame.type} before the hello`);
    if (frame.type === FrameType.Frozen) return this.frozen(frame.id, frame.message);
    if (frame.type === FrameType.ResetDone) return this.resetDone(frame.id, frame.message);
    const target = this.processes.get(frame.id);
    if (!target) {
      if (frame.id >= this.nextId || frame.id === 0)
        throw new ProtocolError(`frame type ${frame.type} for unknown process ${frame.id}`);
      return; // an ended process's late output
    }
    target.receive(frame);
  }

  private frozen(seq: number, report: FreezeReport): void {
    const waiter = this.freezes.get(seq);
    if (!waiter) throw new ProtocolError(`an answer to freeze ${seq}, which was not asked`);
    this.freezes.delete(seq);
    clearTimeout(waiter.timer);
    waiter.resolve({ mode: report.mode, killed: report.killed, lingering: report.lingering });
  }

  private resetDone(seq: number, answer: MessageOf<typeof FrameType.ResetDone>): void {
    const reset = this.resetting;
    if (reset?.seq !== seq || reset.done) throw new ProtocolError(`an answer to reset ${seq}, which was not asked`);
    const { failure, ...done } = answer;
    if (failure) {
      this.resetting = undefined;
      clearTimeout(reset.timer);
      return reset.reject(new Error(`the agent container was not reset: ${failure}`));
    }
    reset.done = done;
    const error = new Error('agent channel: the agent container was reset');
    for (const spawned of [...this.processes.values()]) spawned.fail(error, CHANNEL_LOST);
  }

  /** The channel is over: every process fails, every waiter is rejected; nothing is accepted again. */
  private shutDown(reason: string): void {
    if (this.closedReason) return;
    this.closedReason = reason;
    clearTimeout(this.connectTimer);
    this.conn?.close(reason);
    const error = new Error(`agent channel closed: ${reason}`);
    for (const spawned of [...this.processes.values()]) spawned.fail(error, CHANNEL_LOST);
    for (const waiter of this.helloWaiters.splice(0)) waiter.reject(error);
    for (const [seq, waiter] of this.freezes) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
      this.freezes.delete(seq);
    }
    if (this.resetting) {
      clearTimeout(this.resetting.timer);
      this.resetting.reject(error);
      this.resetting = undefined;
    }
    this.queued.length = 0;
  }
}
