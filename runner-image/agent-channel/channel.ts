// The supervisor's side of the channel to the agent container. It accepts exactly one agent host —
// the first to connect, which the agent container starts before any agent code exists — and refuses
// (and logs) every later connection. Through it the supervisor runs processes in the agent container
// (spawn() is what the Agent SDK's spawnClaudeCodeProcess needs) and stops them all (freeze()).
// Claude Code: `spawnClaudeCodeProcess: (options) => channel.spawn(options)`.
import { createServer, type Server, type Socket } from 'node:net';
import type { SpawnOptions } from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from 'pino';
import { FrameConnection } from '../agent-host/connection.ts';
import {
  CONNECT_TIMEOUT_MS,
  DEFAULT_SOCKET_PATH,
  FREEZE_WAIT_MS,
  FROM_AGENT,
  FrameType,
  PROTOCOL_VERSION,
  ProtocolError,
  encodeFrame,
  type Frame,
  type FrameTypeValue,
  type FreezeMode,
  type MessageOf,
} from '../agent-host/protocol.ts';
import { AgentProcess, CHANNEL_LOST, NOT_STARTED } from './process.ts';
import { listenOnSocket, removeSocket } from './socket.ts';

export { AgentProcess } from './process.ts';

/** What the runner passes unless its configuration says otherwise. */
export const CHANNEL_DEFAULTS = {
  socketPath: DEFAULT_SOCKET_PATH,
  connectTimeoutMs: CONNECT_TIMEOUT_MS,
  /** The agent host's own wait after the kill, with margin for a loaded node. */
  freezeTimeoutMs: 3 * FREEZE_WAIT_MS,
} as const;

export interface AgentChannelOptions {
  socketPath: string;
  log: Logger;
  /** Without an agent host by then, the channel closes and every spawn fails. */
  connectTimeoutMs: number;
  /** How long freeze() waits for the agent host's answer. */
  freezeTimeoutMs: number;
  /** Values that must never reach the agent container (as they are now): a spawn request carrying one is refused. */
  secrets?: () => readonly string[];
}

export type AgentHostHello = MessageOf<typeof FrameType.Hello>;
export interface FreezeReport {
  mode: FreezeMode;
  killed: number;
  /** Killed but still not gone when the agent host stopped waiting: the freeze did not hold. */
  lingering: number;
}

interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (error: Error) => void;
}

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
    const leak = this.carriedSecret(options, env);
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

  private carriedSecret(options: SpawnOptions, env: Record<string, string>): string | undefined {
    const secrets = (this.options.secrets?.() ?? []).filter((s) => s.length >= 4);
    const carries = (text: string) => secrets.some((s) => text.includes(s));
    const variable = Object.keys(env).find((name) => carries(env[name]!) || carries(name));
    if (variable) return `environment variable ${variable}`;
    if (carries(options.command) || options.args.some(carries)) return 'command line';
    return options.cwd && carries(options.cwd) ? 'working directory' : undefined;
  }

  private accept(socket: Socket): void {
    socket.on('error', (error) => this.options.log.debug({ err: error }, 'agent socket connection error'));
    if (this.conn || this.closedReason) {
      this.options.log.warn({ socket: this.options.socketPath }, 'refused a second connection on the agent socket');
      this.refused.add(socket);
      socket.once('close', () => this.refused.delete(socket));
      socket.resume(); // read (and drop) what it sends, so its end is seen
      socket.end(encodeFrame(FrameType.Refused, 0, { reason: 'this supervisor already has its agent host' }));
      return;
    }
    clearTimeout(this.connectTimer);
    this.conn = new FrameConnection(socket, {
      peer: 'agent host',
      accepts: FROM_AGENT,
      log: this.options.log,
      onFrame: (frame) => this.receive(frame),
      onClosed: (reason) => this.shutDown(reason),
    });
  }

  private welcome(hello: AgentHostHello): void {
    if (hello.protocol !== PROTOCOL_VERSION)
      throw new ProtocolError(`agent host speaks protocol ${hello.protocol}, not ${PROTOCOL_VERSION}`);
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
    const target = this.processes.get(frame.id);
    if (!target) {
      if (frame.id >= this.nextId || frame.id === 0)
        throw new ProtocolError(`frame type ${frame.type} for unknown process ${frame.id}`);
      return; // an ended process's late output
    }
    switch (frame.type) {
      case FrameType.Stdout:
        return target.output('stdout', frame.data);
      case FrameType.Stderr:
        return target.output('stderr', frame.data);
      case FrameType.Eof:
        return target.outputEnded(frame.message.stream);
      case FrameType.StdinAck:
        return target.inputAcknowledged(frame.message.bytes);
      case FrameType.Spawned:
        return target.started(frame.message.pid);
      case FrameType.Exit:
        return target.exited({ code: frame.message.code, signal: frame.message.signal as NodeJS.Signals | null });
      case FrameType.SpawnFailed: {
        const error = Object.assign(new Error(`cannot start the process: ${frame.message.message}`), {
          code: frame.message.code,
        });
        return target.fail(error, NOT_STARTED);
      }
    }
  }

  private frozen(seq: number, report: FreezeReport): void {
    const waiter = this.freezes.get(seq);
    if (!waiter) throw new ProtocolError(`an answer to freeze ${seq}, which was not asked`);
    this.freezes.delete(seq);
    clearTimeout(waiter.timer);
    waiter.resolve({ mode: report.mode, killed: report.killed, lingering: report.lingering });
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
    this.queued.length = 0;
  }
}
