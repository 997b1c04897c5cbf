// The agent host's processes: spawned on the supervisor's request, each in its own process group,
// their output streamed back (stdout paced by the supervisor's acknowledgements), signals forwarded
// to the whole group, and, on freeze, every process of the container stopped. On reset (between
// two Sessions), the freeze, the temporary folder emptied, then the agent host re-execs itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Logger } from 'pino';
import type { FrameConnection } from './connection.ts';
import { freezeAll, type FreezeResult } from './freeze.ts';
import {
  FrameType,
  ProtocolError,
  STREAM_WINDOW_BYTES,
  chunks,
  type Frame,
  type FreezeMode,
  type SpawnRequest,
} from './protocol.ts';
import { emptyFolder } from './reset.ts';

/** After a process exits, how long its output may still drain before the exit is reported. */
const DRAIN_AFTER_EXIT_MS = 200;

export interface ResetOptions {
  /**
   * The agent container's own temporary folder (every process's TMPDIR unless asked otherwise); without one a reset
   * is refused.
   */
  tmpDir: string | undefined;
  /** Replaces this process with a new agent host that connects again with the nonce; returns only on failure. */
  reexec: (nonce: string) => void;
}

interface Hosted {
  child: ChildProcess;
  /** stdout bytes sent and not yet acknowledged. */
  unacked: number;
  started: boolean;
}

export class ProcessHost {
  private readonly conn: FrameConnection;
  private readonly log: Logger;
  private readonly mode: FreezeMode;
  private readonly resetOptions: ResetOptions;
  private readonly live = new Map<number, Hosted>();
  /** Process groups of everything spawned here (a group outlives its leader). */
  private readonly groups = new Set<number>();
  private highestId = 0;
  private frozen = false;

  constructor(conn: FrameConnection, log: Logger, mode: FreezeMode, reset: ResetOptions) {
    this.conn = conn;
    this.log = log;
    this.mode = mode;
    this.resetOptions = reset;
  }

  handle(frame: Frame): void {
    if (frame.type === FrameType.Spawn) return this.spawn(frame.id, frame.message);
    if (frame.type === FrameType.Freeze) return void this.freeze(frame.id);
    if (frame.type === FrameType.Reset) return void this.reset(frame.id, frame.message.nonce);
    if (frame.id > this.highestId)
      throw new ProtocolError(`frame type ${frame.type} for process ${frame.id}, which was never spawned`);
    const hosted = this.live.get(frame.id);
    if (!hosted) return; // it has exited; the supervisor had not heard yet
    if (frame.type === FrameType.Stdin) {
      hosted.child.stdin!.write(frame.data, () =>
        this.conn.send(FrameType.StdinAck, frame.id, { bytes: frame.data.length }),
      );
    } else if (frame.type === FrameType.StdinEnd) {
      hosted.child.stdin!.end();
    } else if (frame.type === FrameType.OutputAck) {
      hosted.unacked -= frame.message.bytes;
      if (hosted.unacked <= STREAM_WINDOW_BYTES) hosted.child.stdout!.resume();
    } else if (frame.type === FrameType.Signal) {
      if (!(frame.message.signal in constants.signals))
        throw new ProtocolError(`unknown signal ${frame.message.signal}`);
      this.signalGroup(hosted.child, frame.message.signal as NodeJS.Signals);
    }
  }

  /** SIGKILL to every group spawned here: the connection is gone or the host is stopping. */
  killAll(): void {
    for (const group of this.groups) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // the group is empty
      }
    }
  }

  private spawn(id: number, request: SpawnRequest): void {
    if (id <= this.highestId) throw new ProtocolError(`process id ${id} was used before`);
    this.highestId = id;
    if (this.frozen) {
      this.conn.send(FrameType.SpawnFailed, id, { message: 'the agent container is frozen', code: 'EFROZEN' });
      return;
    }
    let child: ChildProcess;
    try {
      child = spawn(request.command, request.args, {
        cwd: request.cwd,
        env: this.withTmpDir(request.env),
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    } catch (error) {
      const { message, code } = error as NodeJS.ErrnoException;
      this.conn.send(FrameType.SpawnFailed, id, { message: message.slice(0, 2000), code: code?.slice(0, 64) });
      return;
    }
    const hosted: Hosted = { child, unacked: 0, started: false };
    this.live.set(id, hosted); // input may arrive before the process has started
    if (child.pid !== undefined) this.groups.add(child.pid); // known at once; its 'spawn' event comes later
    child.once('spawn', () => {
      hosted.started = true;
      this.log.info({ id, pid: child.pid, command: request.command }, 'process started');
      this.conn.send(FrameType.Spawned, id, { pid: child.pid! });
    });
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (hosted.started) return this.log.warn({ id, err: error }, 'process error');
      this.live.delete(id);
      this.conn.send(FrameType.SpawnFailed, id, {
        message: error.message.slice(0, 2000),
        code: error.code?.slice(0, 64),
      });
    });
    child.stdin!.on('error', (error) => this.log.debug({ id, err: error }, 'process stdin closed'));
    this.stream(id, hosted);
  }

  /** The container's own temporary folder, the one a reset empties, unless the request names another. */
  private withTmpDir(env: Record<string, string>): Record<string, string> {
    const { tmpDir } = this.resetOptions;
    return tmpDir && env.TMPDIR === undefined ? { ...env, TMPDIR: tmpDir } : env;
  }

  private stream(id: number, hosted: Hosted): void {
    const { child } = hosted;
    child.stdout!.on('data', (data: Buffer) => {
      for (const chunk of chunks(data)) this.conn.send(FrameType.Stdout, id, chunk);
      hosted.unacked += data.length;
      if (hosted.unacked > STREAM_WINDOW_BYTES) child.stdout!.pause();
    });
    child.stderr!.on('data', (data: Buffer) => {
      for (const chunk of chunks(data)) this.conn.send(FrameType.Stderr, id, chunk);
    });
    const ended = (['stdout', 'stderr'] as const).map(
      (stream) =>
        new Promise<void>((resolve) => {
          child[stream]!.once('close', () => {
            this.conn.send(FrameType.Eof, id, { stream });
            resolve();
          });
        }),
    );
    child.once('exit', (code, signal) => {
      const drained = new Promise((resolve) => setTimeout(resolve, DRAIN_AFTER_EXIT_MS).unref());
      void Promise.race([Promise.all(ended), drained]).then(() => {
        this.log.info({ id, pid: child.pid, code, signal }, 'process exited');
        this.conn.send(FrameType.Exit, id, { code, signal });
      });
      // Output may outlive the exit (a grandchild holding the pipe): acknowledgements still count.
      void Promise.all(ended).then(() => this.live.delete(id));
    });
  }

  private signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      child.kill(signal); // the group is gone; the process may still be there
    }
  }

  private async freeze(seq: number): Promise<void> {
    const result = await this.freezeAll();
    this.conn.send(FrameType.Frozen, seq, { mode: result.mode, killed: result.killed, lingering: result.lingering });
  }

  private async freezeAll(): Promise<FreezeResult> {
    this.frozen = true;
    const result = await freezeAll(this.mode, this.groups);
    this.log.info(result, 'agent container frozen');
    if (result.lingering)
      this.log.warn({ lingering: result.lingering }, 'killed processes not gone yet (a SIGKILL is pending for them)');
    return result;
  }

  /** Freeze, empty the temporary folder, answer, re-exec. Anything that fails leaves the host frozen, and says why. */
  private async reset(seq: number, nonce: string): Promise<void> {
    const { mode, killed, lingering } = await this.freezeAll();
    let removed = 0;
    let failure = lingering ? `${lingering} of the killed processes are not gone` : undefined;
    if (!failure) {
      try {
        removed = await this.emptyTmp();
      } catch (error) {
        failure = `the temporary folder could not be emptied: ${(error as Error).message}`;
      }
    }
    const done = { mode, killed, lingering, removed, ...(failure ? { failure: failure.slice(0, 2000) } : {}) };
    this.log.info(done, failure ? 'agent container not reset' : 'agent container reset; re-executing');
    if (failure) return void this.conn.send(FrameType.ResetDone, seq, done);
    await this.conn.sendFlushed(FrameType.ResetDone, seq, done);
    this.resetOptions.reexec(nonce);
  }

  private emptyTmp(): Promise<number> {
    const { tmpDir } = this.resetOptions;
    if (!tmpDir) throw new Error('TMPDIR is not set: the agent container has no temporary folder of its own');
    return emptyFolder(tmpDir);
  }
}
