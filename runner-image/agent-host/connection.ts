// One end of the channel: frames in and out of a Unix socket. A malformed frame, or a frame the
// handler rejects with a ProtocolError, closes the connection; the reason is logged and reported once.
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { FrameDecoder, ProtocolError, encodeFrame, type Frame, type FrameTypeValue } from './protocol.ts';

export interface FrameConnectionOptions {
  /** What is at the other end, for log lines: 'agent host' or 'supervisor'. */
  peer: string;
  /** Frame types this side may receive. */
  accepts: ReadonlySet<number>;
  log: Logger;
  onFrame: (frame: Frame) => void;
  /** Called once, with why the connection ended; byPeer when the other side ended it in order. */
  onClosed: (reason: string, byPeer: boolean) => void;
}

export class FrameConnection {
  private readonly socket: Socket;
  private readonly options: FrameConnectionOptions;
  private readonly decoder: FrameDecoder;
  private closedReason: string | undefined;

  constructor(socket: Socket, options: FrameConnectionOptions) {
    this.socket = socket;
    this.options = options;
    this.decoder = new FrameDecoder(options.accepts);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', (error) => this.close(`socket error: ${error.message}`));
    socket.on('end', () => this.close(`the ${options.peer} closed the connection`, true));
    socket.on('close', () => this.close(`the connection to the ${options.peer} was lost`));
  }

  get closed(): boolean {
    return this.closedReason !== undefined;
  }

  /** Sends a frame; false when the connection is closed (the frame is dropped). */
  send(type: FrameTypeValue, id: number, payload: Buffer | object = {}): boolean {
    if (this.closed) return false;
    this.socket.write(encodeFrame(type, id, payload));
    return true;
  }

  /** Sends a frame and resolves once the socket has handed it to the kernel (before this process execs). */
  sendFlushed(type: FrameTypeValue, id: number, payload: object): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`the connection to the ${this.options.peer} is closed`));
    return new Promise((resolve, reject) =>
      this.socket.write(encodeFrame(type, id, payload), (error) => (error ? reject(error) : resolve())),
    );
  }

  /** Closes at once; logs and reports the reason the first time. */
  close(reason: string, byPeer = false): void {
    if (this.closed) return;
    this.closedReason = reason;
    this.socket.destroy();
    this.options.log.info({ peer: this.options.peer, reason }, 'agent channel closed');
    this.options.onClosed(reason, byPeer);
  }

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    try {
      for (const frame of this.decoder.push(chunk)) {
        if (this.closed) return;
        this.options.onFrame(frame);
      }
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this.options.log.warn({ peer: this.options.peer, err: error }, 'malformed frame on the agent channel');
      this.close(`malformed frame: ${error.message}`);
    }
  }
}
