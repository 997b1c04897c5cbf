// The relay's inbound journal: an append-only file of JSON lines on a volume that outlives the
// process. A webhook is acknowledged once its message is written to the file (group commit: every
// append waiting while one write runs goes out in the next write); an fdatasync follows in the
// background, at most once a second. A message leaves the journal when it is done; at start-up the
// messages still in it are handed back.
//
// Why the acknowledgement does not wait for fdatasync: a written record is in the kernel's page
// cache, which survives the relay process crashing or being killed, the failure the chart's
// emptyDir covers (the restarted container finds the file). fdatasync matters only if the node
// itself goes down before it completes, and then the Pod, its emptyDir with it, is usually lost
// anyway; its tail on a disk shared with etcd (tens of ms, up to a second) was the
// acknowledgement's tail. Syncs are spaced (SYNC_EVERY_MS): an append during one waits for it too.
// docs/relay.md, "Journal".
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { open, rename, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { InboundMessage } from './handler.ts';
import type { Route } from './router.ts';

type Entry =
  | { t: 'in'; m: InboundMessage }
  | { t: 'route'; id: string; r: Route }
  | { t: 'done'; id: string };

/** A message the journal holds: not yet done, with the route it was given if it got that far. */
export interface JournalRecord {
  message: InboundMessage;
  route?: Route;
}

const FILE = 'inbound.jsonl';
const INSTANCE = 'instance';
/**
 * Rewrite the file (keeping only what is open) once it has this many lines and at least twice as
 * many as are open, so a large backlog is not rewritten on every flush.
 */
const COMPACT_AFTER = 20_000;
/**
 * An fdatasync runs at most this often. An append that lands while one runs waits for the file
 * system's commit (the file's size changes), so back-to-back syncs put that wait on most
 * acknowledgements; one a second bounds what a node crash could lose to about a second.
 */
const SYNC_EVERY_MS = 1000;

export interface JournalOptions {
  /** hears how long each background fdatasync took */
  onSync?: (seconds: number) => void;
  /** lines before the file is rewritten (default 20,000) */
  compactAfter?: number;
}

interface Waiter {
  line: string;
  resolve(): void;
  reject(error: unknown): void;
}

export class Journal {
  /** This journal's identity: stable across restarts of the process that owns the folder. */
  readonly instance: string;
  private readonly dir: string;
  private readonly open = new Map<string, JournalRecord>();
  private file!: FileHandle;
  private lines = 0;
  private waiting: Waiter[] = [];
  private flushing: Promise<void> | undefined;
  /** The background fdatasync: scheduled, running, and whether a write has landed since the last. */
  private syncTimer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private unsynced = false;
  private failed: unknown;
  private readonly onSync?: (seconds: number) => void;
  private readonly compactAfter: number;

  private constructor(dir: string, instance: string, options: JournalOptions) {
    this.dir = dir;
    this.instance = instance;
    this.onSync = options.onSync;
    this.compactAfter = options.compactAfter ?? COMPACT_AFTER;
  }

  /** Opens (or creates) the journal in `dir`; what was left open is kept, the rest compacted away. */
  static async open(dir: string, options: JournalOptions = {}): Promise<Journal> {
    mkdirSync(dir, { recursive: true });
    const idFile = join(dir, INSTANCE);
    if (!existsSync(idFile)) writeFileSync(idFile, randomBytes(8).toString('hex'), { flush: true });
    const journal = new Journal(dir, readFileSync(idFile, 'utf8').trim(), options);
    journal.load();
    await journal.compact();
    return journal;
  }

  /** Messages recorded and not done, in the order they were recorded. */
  records(): JournalRecord[] {
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
  record(message: InboundMessage): Promise<void> {
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

  /** Writes what is waiting, syncs it and closes the file. */
  async close(): Promise<void> {
    while (this.flushing || this.syncing) await (this.flushing ?? this.syncing);
    clearTimeout(this.syncTimer);
    if (this.unsynced) await this.sync();
    await this.file.close();
  }

  private load(): void {
    const path = join(this.dir, FILE);
    if (!existsSync(path)) return;
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      let entry: Entry;
      try {
        entry = JSON.parse(line) as Entry;
      } catch {
        continue; // the torn last line of a crash mid-write: it was never acknowledged
      }
      if (entry.t === 'in') this.open.set(entry.m.id, { message: entry.m });
      else if (entry.t === 'route' && this.open.has(entry.id)) this.open.get(entry.id)!.route = entry.r;
      else if (entry.t === 'done') this.open.delete(entry.id);
    }
  }

  private append(entry: Entry): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ line: `${JSON.stringify(entry)}\n`, resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  /** Group commit: one write for every append that arrived meanwhile; an fdatasync follows within SYNC_EVERY_MS. */
  private async flush(): Promise<void> {
    while (this.waiting.length) {
      const batch = this.waiting;
      this.waiting = [];
      try {
        await this.file.write(batch.map((w) => w.line).join(''));
        this.lines += batch.length;
        batch.forEach((w) => w.resolve());
        this.syncLater();
        if (this.lines >= Math.max(this.compactAfter, 2 * this.open.size)) {
          clearTimeout(this.syncTimer);
          this.syncTimer = undefined;
          await this.syncing;
          await this.compact(); // syncs what it keeps
          this.unsynced = false;
        }
      } catch (error) {
        this.failed = error; // a journal that cannot write acknowledges nothing more
        batch.forEach((w) => w.reject(error));
      }
    }
    this.flushing = undefined;
  }

  /** Marks a write to sync and schedules the next fdatasync, SYNC_EVERY_MS after the last one ended. */
  private syncLater(): void {
    this.unsynced = true;
    if (this.syncTimer || this.syncing || this.failed) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      this.syncing = this.sync();
    }, SYNC_EVERY_MS);
    this.syncTimer.unref();
  }

  /** One fdatasync covering every write so far; a failed one stops the journal as a failed write does. */
  private async sync(): Promise<void> {
    this.unsynced = false;
    const started = performance.now();
    try {
      await this.file.datasync();
      this.onSync?.((performance.now() - started) / 1000);
    } catch (error) {
      this.failed = error;
    }
    this.syncing = undefined;
    if (this.unsynced) this.syncLater();
  }

  /** Rewrites the file with only the open messages: temporary file, fsync, rename, fsync folder. */
  private async compact(): Promise<void> {
    const path = join(this.dir, FILE);
    const temporary = `${path}.tmp`;
    const entries = this.records().flatMap((r): Entry[] => [{ t: 'in', m: r.message }, ...(r.route ? [{ t: 'route' as const, id: r.message.id, r: r.route }] : [])]);
    const next = await open(temporary, 'w');
    await next.write(entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
    await next.datasync();
    await rename(temporary, path);
    const folder = await open(this.dir, 'r');
    await folder.sync();
    await folder.close();
    await this.file?.close();
    await next.close();
    this.file = await open(path, 'a');
    this.lines = entries.length;
  }
}
