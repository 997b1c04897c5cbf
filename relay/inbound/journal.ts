// The relay's inbound journal: append-only JSON lines on a volume that outlives the process. A
// webhook is acknowledged once its message is written to the file: a synchronous write() on the
// event loop (appends of one turn go out in one write), so the acknowledgement does not wait for
// a thread-pool round trip; an fdatasync follows in the background, at most once a second. A
// message leaves the journal when it is done; at start-up the messages still in it are handed back.
//
// Why the acknowledgement does not wait for fdatasync: a written record is in the kernel's page
// cache, which survives the relay process crashing or being killed, the failure the chart's
// emptyDir covers (the restarted container finds the file). fdatasync matters only if the node
// itself goes down before it completes, and then the Pod, its emptyDir with it, is usually lost
// anyway; its tail on a disk shared with etcd (tens of ms, up to a second) was the
// acknowledgement's tail.
//
// Compaction starts a new segment beginning with what is open (journal-segments.ts); the older
// segments are removed once the new one is synced. docs/relay.md, "Journal".
import { randomBytes } from 'node:crypto';
import {
  close,
  closeSync,
  existsSync,
  fdatasync,
  fsync,
  mkdirSync,
  openSync,
  readFileSync,
  rm,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { InboundMessage } from './message.ts';
import {
  listSegments,
  readSegments,
  segmentName,
  snapshot,
  type Entry,
  type Journaled,
  type JournalRecord,
} from './journal-segments.ts';
import type { Route } from './router.ts';

export type { JournalRecord } from './journal-segments.ts';

const INSTANCE = 'instance';
/**
 * Start a new segment (keeping only what is open) once the current one has this many lines and at
 * least twice as many as are open, so a large backlog is not rewritten on every append.
 */
const COMPACT_AFTER = 20_000;
/** An fdatasync runs at most this often: it bounds what a node crash could lose to about a second. */
const SYNC_EVERY_MS = 1000;

const syncData = promisify(fdatasync);
const closeFd = promisify(close);
const remove = promisify(rm);

export interface JournalOptions {
  /** hears how long each background fdatasync took */
  onSync?: (seconds: number) => void;
  /** lines before a new segment is started (default 20,000) */
  compactAfter?: number;
}

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** `M`: what it records (inbound messages by default; the GitHub deliveries in a journal of their own). */
export class Journal<M extends Journaled = InboundMessage> {
  /** This journal's identity: stable across restarts of the process that owns the folder. */
  readonly instance: string;
  private readonly dir: string;
  private readonly open: Map<string, JournalRecord<M>>;
  /** The segment appends go to: its number, descriptor and line count. */
  private segment = { n: 0, fd: -1, lines: 0 };
  /** Older segments, removed (their descriptors closed) once the current one is synced. */
  private superseded: Array<{ name: string; fd?: number }> = [];
  private pending: string[] = [];
  private waiters: Waiter[] = [];
  private flushQueued = false;
  /** The background fdatasync: scheduled, running, and whether a write has landed since the last. */
  private syncTimer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private unsynced = false;
  private failed: unknown;
  private readonly onSync?: (seconds: number) => void;
  private readonly compactAfter: number;

  private constructor(dir: string, instance: string, open: Map<string, JournalRecord<M>>, options: JournalOptions) {
    this.dir = dir;
    this.instance = instance;
    this.open = open;
    this.onSync = options.onSync;
    this.compactAfter = options.compactAfter ?? COMPACT_AFTER;
  }

  /** Opens (or creates) the journal in `dir`; what was left open is kept in a new segment, synced, the rest removed. */
  static async open<M extends Journaled = InboundMessage>(
    dir: string,
    options: JournalOptions = {},
  ): Promise<Journal<M>> {
    mkdirSync(dir, { recursive: true });
    const idFile = join(dir, INSTANCE);
    if (!existsSync(idFile)) writeFileSync(idFile, randomBytes(8).toString('hex'), { flush: true });
    const segments = listSegments(dir);
    const journal = new Journal<M>(dir, readFileSync(idFile, 'utf8').trim(), readSegments<M>(dir, segments), options);
    journal.superseded = segments.map(([, name]) => ({ name }));
    journal.segment.n = segments.at(-1)?.[0] ?? 0;
    journal.rotate();
    await journal.sync();
    if (!journal.healthy) throw journal.failed;
    return journal;
  }

  /** Messages recorded and not done, in the order they were recorded. */
  records(): Array<JournalRecord<M>> {
    return [...this.open.values()];
  }

  /** How many messages are recorded and not done: the backlog. */
  get depth(): number {
    return this.open.size;
  }

  /** false once a write has failed: the journal acknowledges nothing more and the process must restart. */
  get healthy(): boolean {
    return this.failed === undefined;
  }

  /** Resolves once the message is written to the file (in the page cache; fdatasync follows). */
  record(message: M): Promise<void> {
    this.open.set(message.id, { message });
    return this.append({ t: 'in', m: message });
  }

  /** Remembers how a message was routed, so a replay acts on it the same way. */
  routed(id: string, route: Route): Promise<void> {
    const record = this.open.get(id);
    if (record) record.route = route;
    return this.append({ t: 'route', id, r: route });
  }

  /** The message has been acted on (and answered): a restart does not replay it. */
  done(id: string): Promise<void> {
    if (!this.open.delete(id)) return Promise.resolve();
    return this.append({ t: 'done', id });
  }

  /** Writes what is waiting, syncs it and closes the files. */
  async close(): Promise<void> {
    this.flush();
    while (this.syncing) await this.syncing;
    clearTimeout(this.syncTimer);
    if (this.unsynced || this.superseded.length) await this.sync();
    for (const { fd } of this.superseded) if (fd !== undefined) await closeFd(fd);
    await closeFd(this.segment.fd);
  }

  private append(entry: Entry<M>): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<void>((resolve, reject) => {
      this.pending.push(`${JSON.stringify(entry)}\n`);
      this.waiters.push({ resolve, reject });
      if (!this.flushQueued) queueMicrotask(() => this.flush());
      this.flushQueued = true;
    });
  }

  /** One write for every append of this turn of the event loop; then, if the segment is long, a new one. */
  private flush(): void {
    this.flushQueued = false;
    const waiters = this.waiters;
    if (!waiters.length) return;
    const text = this.pending.join('');
    this.pending = [];
    this.waiters = [];
    try {
      if (this.failed) throw this.failed;
      writeAll(this.segment.fd, text);
    } catch (error) {
      this.failed = error; // a journal that cannot write acknowledges nothing more
      waiters.forEach((w) => w.reject(error));
      return;
    }
    this.segment.lines += waiters.length;
    this.unsynced = true;
    waiters.forEach((w) => w.resolve());
    try {
      if (this.segment.lines >= Math.max(this.compactAfter, 2 * this.open.size)) this.rotate();
    } catch (error) {
      this.failed = error;
    }
    this.syncLater();
  }

  /** Starts the next segment with what is open; the current one is superseded (removed after the next sync). */
  private rotate(): void {
    const next = this.segment.n + 1;
    const fd = openSync(join(this.dir, segmentName(next)), 'a');
    const { text, lines } = snapshot(this.open.values());
    try {
      writeAll(fd, text);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    if (this.segment.fd >= 0) this.superseded.push({ name: segmentName(this.segment.n), fd: this.segment.fd });
    this.segment = { n: next, fd, lines };
    this.unsynced = true;
  }

  /** Marks a write to sync and schedules the next fdatasync, SYNC_EVERY_MS after the last one ended. */
  private syncLater(): void {
    if (this.syncTimer || this.syncing || this.failed) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      this.syncing = this.sync();
    }, SYNC_EVERY_MS);
    this.syncTimer.unref();
  }

  /**
   * One fdatasync covering every write so far; then, if segments were superseded before it, the
   * folder is synced (the new segment's name is durable) and they are removed. A failure stops the
   * journal as a failed write does.
   */
  private async sync(): Promise<void> {
    this.unsynced = false;
    const superseded = this.superseded;
    this.superseded = [];
    const started = performance.now();
    try {
      await syncData(this.segment.fd);
      this.onSync?.((performance.now() - started) / 1000);
      if (superseded.length) {
        await syncFolder(this.dir);
        for (const segment of superseded.slice()) {
          if (segment.fd !== undefined) await closeFd(segment.fd);
          segment.fd = undefined;
          await remove(join(this.dir, segment.name), { force: true });
          superseded.shift();
        }
      }
    } catch (error) {
      this.failed = error;
      // what is left: closed by close(), removed by a later start
      this.superseded = [...superseded, ...this.superseded];
    }
    this.syncing = undefined;
    if (this.unsynced) this.syncLater();
  }
}

function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text);
  for (let written = 0; written < bytes.length;) written += writeSync(fd, bytes, written);
}

async function syncFolder(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await promisify(fsync)(fd);
  } finally {
    closeSync(fd);
  }
}
