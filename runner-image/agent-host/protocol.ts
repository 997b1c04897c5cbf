// The channel between the runner Pod's two containers: length-prefixed frames over one Unix socket.
// A frame is [u32 length][u8 type][u32 process id][payload], length counting type, id and payload.
// Output and input bytes travel raw; everything else is a JSON object checked against its schema.
// Frames of unknown type, over the size limit, or with a payload that fails its schema are a
// protocol error: the side that reads one closes the connection and logs why.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { AGENT_SOCKET_PATH } from '../../common/session/names.ts';

export const PROTOCOL_VERSION = 2;
/** Where the supervisor listens by default: a folder of its own on the Pod's shared emptyDir. */
export const DEFAULT_SOCKET_PATH = AGENT_SOCKET_PATH;
/** How long each side waits for the other to appear on the socket (both containers start together). */
export const CONNECT_TIMEOUT_MS = 120_000;
/** How long the agent host waits, after a freeze's SIGKILLs, for the killed processes to be gone. */
export const FREEZE_WAIT_MS = 5000;
/** How long the supervisor waits for the re-exec'd agent host to connect again after a reset. */
export const REEXEC_CONNECT_MS = 30_000;
/** Largest frame either side accepts (a spawn request carries Claude Code's arguments and environment). */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** Input and output bytes are cut into frames of at most this size. */
export const DATA_CHUNK_BYTES = 64 * 1024;
/** Bytes of a stream sent but not yet taken by the other side before the sender waits. */
export const STREAM_WINDOW_BYTES = 1024 * 1024;
const HEADER_BYTES = 9;

export const FrameType = {
  Hello: 1,
  Welcome: 2,
  Refused: 3,
  Spawn: 4,
  Spawned: 5,
  SpawnFailed: 6,
  Stdin: 7,
  StdinEnd: 8,
  StdinAck: 9,
  Stdout: 10,
  Stderr: 11,
  OutputAck: 12,
  Eof: 13,
  Signal: 14,
  Exit: 15,
  Freeze: 16,
  Frozen: 17,
  Reset: 18,
  ResetDone: 19,
} as const;
export type FrameTypeValue = (typeof FrameType)[keyof typeof FrameType];

const DATA_TYPES = new Set<number>([FrameType.Stdin, FrameType.Stdout, FrameType.Stderr]);
const FreezeModes = Type.Union([Type.Literal('namespace'), Type.Literal('groups'), Type.Literal('uid')]);
const Nonce = Type.String({ pattern: '^[0-9a-f]{64}$' });
const Signal = Type.String({ pattern: '^SIG[A-Z0-9]{1,10}$' });
const Empty = Type.Object({}, { additionalProperties: false });
const Bytes = Type.Object(
  { bytes: Type.Integer({ minimum: 0, maximum: MAX_FRAME_BYTES }) },
  { additionalProperties: false },
);

/** The JSON payload of every non-data frame type. */
export const Payloads = {
  [FrameType.Hello]: Type.Object(
    {
      protocol: Type.Integer(),
      pid: Type.Integer(),
      freeze: FreezeModes,
      /** When this process began (ms since the epoch): a re-exec'd agent host is a new process image. */
      startedAt: Type.Number(),
      /** After a reset: the nonce the supervisor gave in it, which only the re-exec'd agent host knows. */
      resumes: Type.Optional(Nonce),
    },
    { additionalProperties: false },
  ),
  [FrameType.Welcome]: Empty,
  [FrameType.Refused]: Type.Object({ reason: Type.String({ maxLength: 1000 }) }, { additionalProperties: false }),
  [FrameType.Spawn]: Type.Object(
    {
      command: Type.String({ minLength: 1 }),
      args: Type.Array(Type.String()),
      env: Type.Record(Type.String(), Type.String()),
      cwd: Type.Optional(Type.String({ minLength: 1 })),
    },
    { additionalProperties: false },
  ),
  [FrameType.Spawned]: Type.Object({ pid: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
  [FrameType.SpawnFailed]: Type.Object(
    { message: Type.String({ maxLength: 2000 }), code: Type.Optional(Type.String({ maxLength: 64 })) },
    { additionalProperties: false },
  ),
  [FrameType.StdinEnd]: Empty,
  [FrameType.StdinAck]: Bytes,
  [FrameType.OutputAck]: Bytes,
  [FrameType.Eof]: Type.Object(
    { stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]) },
    { additionalProperties: false },
  ),
  [FrameType.Signal]: Type.Object({ signal: Signal }, { additionalProperties: false }),
  [FrameType.Exit]: Type.Object(
    { code: Type.Union([Type.Integer(), Type.Null()]), signal: Type.Union([Signal, Type.Null()]) },
    { additionalProperties: false },
  ),
  [FrameType.Freeze]: Empty,
  [FrameType.Frozen]: Type.Object(
    {
      mode: FreezeModes,
      killed: Type.Integer({ minimum: 0 }),
      lingering: Type.Integer({ minimum: 0 }),
    },
    { additionalProperties: false },
  ),
  [FrameType.Reset]: Type.Object({ nonce: Nonce }, { additionalProperties: false }),
  [FrameType.ResetDone]: Type.Object(
    {
      mode: FreezeModes,
      killed: Type.Integer({ minimum: 0 }),
      lingering: Type.Integer({ minimum: 0 }),
      /** Entries removed from the agent container's temporary folder. */
      removed: Type.Integer({ minimum: 0 }),
      /** Why the agent host did not re-exec (the freeze did not hold, the folder could not be emptied). */
      failure: Type.Optional(Type.String({ maxLength: 2000 })),
    },
    { additionalProperties: false },
  ),
} satisfies Partial<Record<FrameTypeValue, TSchema>>;

type Payloads = typeof Payloads;
export type MessageOf<T extends keyof Payloads> = Static<Payloads[T]>;
export type FreezeMode = MessageOf<typeof FrameType.Hello>['freeze'];
export type SpawnRequest = MessageOf<typeof FrameType.Spawn>;

/** Which frame types each side may receive. */
export const FROM_AGENT = new Set<number>([
  FrameType.Hello,
  FrameType.Spawned,
  FrameType.SpawnFailed,
  FrameType.StdinAck,
  FrameType.Stdout,
  FrameType.Stderr,
  FrameType.Eof,
  FrameType.Exit,
  FrameType.Frozen,
  FrameType.ResetDone,
]);
export const FROM_SUPERVISOR = new Set<number>([
  FrameType.Welcome,
  FrameType.Refused,
  FrameType.Spawn,
  FrameType.Stdin,
  FrameType.StdinEnd,
  FrameType.OutputAck,
  FrameType.Signal,
  FrameType.Freeze,
  FrameType.Reset,
]);

export type Frame =
  | { type: typeof FrameType.Stdin | typeof FrameType.Stdout | typeof FrameType.Stderr; id: number; data: Buffer }
  | { [T in keyof Payloads]: { type: T; id: number; message: MessageOf<T> } }[keyof Payloads];

/** A frame the peer should not have sent: the connection is closed with this message. */
export class ProtocolError extends Error {}

/** One frame's bytes; a data payload is a Buffer, anything else a JSON message. */
export function encodeFrame(type: FrameTypeValue, id: number, payload: Buffer | object): Buffer {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(JSON.stringify(payload));
  if (HEADER_BYTES - 4 + body.length > MAX_FRAME_BYTES)
    throw new ProtocolError(`frame of ${body.length} bytes is over the ${MAX_FRAME_BYTES}-byte limit`);
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32BE(HEADER_BYTES - 4 + body.length, 0);
  header.writeUInt8(type, 4);
  header.writeUInt32BE(id, 5);
  return Buffer.concat([header, body]);
}

function decodePayload(type: number, id: number, body: Buffer): Frame {
  if (DATA_TYPES.has(type)) return { type, id, data: body } as Frame;
  let message: unknown;
  try {
    message = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ProtocolError(`frame type ${type}: payload is not JSON`);
  }
  const schema = Payloads[type as keyof Payloads];
  if (!Value.Check(schema, message)) {
    const first = Value.Errors(schema, message).First();
    throw new ProtocolError(
      `frame type ${type}: ${first ? `${first.path || '/'} ${first.message}` : 'invalid payload'}`,
    );
  }
  return { type, id, message } as Frame;
}

/** Turns a byte stream into frames; throws ProtocolError on the first malformed one. */
export class FrameDecoder {
  /** Received bytes not yet parsed; joined only once a whole frame is there. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly accepts: ReadonlySet<number>;

  constructor(accepts: ReadonlySet<number>) {
    this.accepts = accepts;
  }

  push(chunk: Buffer): Frame[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const frames: Frame[] = [];
    for (
      let length = this.nextLength();
      length !== undefined && this.pendingBytes >= 4 + length;
      length = this.nextLength()
    ) {
      const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
      const type = all.readUInt8(4);
      if (!this.accepts.has(type)) throw new ProtocolError(`unexpected frame type ${type}`);
      frames.push(decodePayload(type, all.readUInt32BE(5), all.subarray(HEADER_BYTES, 4 + length)));
      const rest = all.subarray(4 + length);
      this.pending = rest.length ? [rest] : [];
      this.pendingBytes = rest.length;
    }
    return frames;
  }

  /** The next frame's length once its prefix has arrived; checked before its body is buffered. */
  private nextLength(): number | undefined {
    if (this.pendingBytes < 4) return undefined;
    if (this.pending[0]!.length < 4) this.pending = [Buffer.concat(this.pending)];
    const length = this.pending[0]!.readUInt32BE(0);
    if (length < HEADER_BYTES - 4) throw new ProtocolError(`frame length ${length} is shorter than a header`);
    if (length > MAX_FRAME_BYTES)
      throw new ProtocolError(`frame length ${length} is over the ${MAX_FRAME_BYTES}-byte limit`);
    return length;
  }
}

/** Cuts a payload into frames of at most DATA_CHUNK_BYTES. */
export function* chunks(data: Buffer): Generator<Buffer> {
  for (let at = 0; at < data.length; at += DATA_CHUNK_BYTES) yield data.subarray(at, at + DATA_CHUNK_BYTES);
}
