// A process running in the agent container, seen from the supervisor: what the Agent SDK's
// spawnClaudeCodeProcess must return (stdin, stdout, killed, exitCode, signalCode, kill, 'exit' and
// 'error' events), like a ChildProcess. Input is paced by the agent host's acknowledgements, output
// is acknowledged as it is read, so neither side buffers more than a window of a stream.
import { EventEmitter } from 'node:events';
import { Readable, Writable } from 'node:stream';
import type { SpawnedProcess } from '@anthropic-ai/claude-agent-sdk';
import { FrameType, STREAM_WINDOW_BYTES, chunks, type Frame, type FrameTypeValue } from '../agent-host/protocol.ts';

/** Sends a frame about this process; false when the channel is closed. */
export type SendFrame = (type: FrameTypeValue, payload?: Buffer | object) => boolean;

export interface ProcessEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A process that could not be started ends like a shell's "cannot run". */
export const NOT_STARTED: ProcessEnd = { code: 127, signal: null };
/** A process whose channel died: in a Pod the agent container's processes die with its init. */
export const CHANNEL_LOST: ProcessEnd = { code: null, signal: 'SIGKILL' };

const epipe = () => Object.assign(new Error('write EPIPE: the agent process has ended'), { code: 'EPIPE' });

export class AgentProcess extends EventEmitter implements SpawnedProcess {
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** stderr; what nobody reads beyond a window is dropped (the process never waits for it). */
  readonly stderr: Readable;
  /** The process id inside the agent container, once it has started. */
  pid: number | undefined;
  killed = false;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  /** Why the process failed (spawn refused or failed, channel lost), as also emitted on 'error'. */
  failure: Error | undefined;
  private readonly send: SendFrame;
  private ended = false;
  private inputInFlight = 0;
  private inputWaiting: (() => void) | undefined;
  private outputUnacked = 0;
  private readonly streamsOpen = new Set(['stdout', 'stderr']);

  constructor(send: SendFrame) {
    super();
    this.send = send;
    this.stdin = new Writable({
      write: (chunk: Buffer, _encoding, done) => this.writeInput(chunk, done),
      final: (done) => {
        this.send(FrameType.StdinEnd);
        done();
      },
    });
    this.stdout = new Readable({ read: () => this.acknowledgeOutput() });
    this.stderr = new Readable({ read: () => undefined });
  }

  /** Sends the signal to the process's group in the agent container. */
  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.ended) return false;
    const sent = this.send(FrameType.Signal, { signal });
    if (sent) this.killed = true;
    return sent;
  }

  /** A frame the agent host sent about this process. */
  receive(frame: Frame): void {
    switch (frame.type) {
      case FrameType.Stdout:
        return this.output('stdout', frame.data);
      case FrameType.Stderr:
        return this.output('stderr', frame.data);
      case FrameType.Eof:
        return this.outputEnded(frame.message.stream);
      case FrameType.StdinAck:
        return this.inputAcknowledged(frame.message.bytes);
      case FrameType.Spawned:
        return this.started(frame.message.pid);
      case FrameType.Exit:
        return this.exited({ code: frame.message.code, signal: frame.message.signal as NodeJS.Signals | null });
      case FrameType.SpawnFailed: {
        const error = Object.assign(new Error(`cannot start the process: ${frame.message.message}`), {
          code: frame.message.code,
        });
        return this.fail(error, NOT_STARTED);
      }
    }
  }

  started(pid: number): void {
    this.pid = pid;
    this.emit('spawn');
  }

  output(stream: 'stdout' | 'stderr', data: Buffer): void {
    if (!this.streamsOpen.has(stream)) return;
    if (stream === 'stderr') {
      if (this.stderr.readableLength < STREAM_WINDOW_BYTES) this.stderr.push(data);
      return;
    }
    this.outputUnacked += data.length;
    this.stdout.push(data);
  }

  outputEnded(stream: 'stdout' | 'stderr'): void {
    if (!this.streamsOpen.delete(stream)) return;
    this[stream].push(null);
    this.closeWhenDone();
  }

  inputAcknowledged(bytes: number): void {
    this.inputInFlight -= bytes;
    if (this.inputWaiting && this.inputInFlight <= STREAM_WINDOW_BYTES) {
      const resume = this.inputWaiting;
      this.inputWaiting = undefined;
      resume();
    }
  }

  exited(end: ProcessEnd): void {
    if (this.ended) return;
    this.ended = true;
    this.exitCode = end.code;
    this.signalCode = end.signal;
    this.stdin.destroy();
    const waiting = this.inputWaiting;
    this.inputWaiting = undefined;
    waiting?.();
    this.emit('exit', end.code, end.signal);
    this.closeWhenDone();
  }

  /** Ends the streams; a process still running ends with an error: 'error' (when listened to), then 'exit'. */
  fail(error: Error, end: ProcessEnd): void {
    for (const stream of ['stdout', 'stderr'] as const) this.outputEnded(stream);
    if (this.ended) return;
    this.failure = error;
    if (this.listenerCount('error') > 0) this.emit('error', error);
    this.exited(end);
  }

  private writeInput(chunk: Buffer, done: (error?: Error) => void): void {
    if (this.ended) return done(epipe());
    for (const part of chunks(chunk)) this.send(FrameType.Stdin, part);
    this.inputInFlight += chunk.length;
    if (this.inputInFlight <= STREAM_WINDOW_BYTES) done();
    else this.inputWaiting = () => done();
  }

  private acknowledgeOutput(): void {
    if (this.outputUnacked === 0 || !this.streamsOpen.has('stdout')) return;
    this.send(FrameType.OutputAck, { bytes: this.outputUnacked });
    this.outputUnacked = 0;
  }

  private closeWhenDone(): void {
    if (this.ended && this.streamsOpen.size === 0) this.emit('close', this.exitCode, this.signalCode);
  }
}
