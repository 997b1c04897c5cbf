// A level-based informer: list + watch one collection (or get + watch one object by name), keep it
// in memory, tell handlers the current object (or undefined when gone) for every key that changed.
// Survives watch errors (jittered backoff), 410 Gone (relist) and silent stalls (watchdog relist).
import type pino from 'pino';
import type { KubeConnection } from './connection.ts';
import { isNotFound } from './errors.ts';
import { getJson, HttpError, streamJsonLines, type Query } from './raw.ts';

type Meta = { metadata?: { name?: string; namespace?: string; resourceVersion?: string; managedFields?: unknown } };

/** managedFields are server-side-apply bookkeeping nobody reads from a cache; they can outweigh the object. */
export const withoutManagedFields = <T>(object: T): T => {
  delete (object as Meta).metadata?.managedFields;
  return object;
};

export interface InformerOptions {
  kube: KubeConnection;
  /** Collection path, e.g. /apis/tether.dev/v1alpha1/namespaces/ns/sessions or /api/v1/namespaces/ns/pods. */
  path: string;
  labelSelector?: string;
  /**
   * Only the object of this name: read with get and watched with a metadata.name field selector,
   * which RBAC allows to a Role that grants get and watch on that one resourceName (no list).
   */
  name?: string;
  /** No event or bookmark for this long → relist (default 150 s; bookmarks come about once a minute). */
  stallTimeoutMs?: number;
  logger: pino.Logger;
  /** Called with `gone`, `error` or `stall` each time the informer has to recover. */
  onRestart?: (reason: string) => void;
  /** Restart backoff bounds (default 200 ms → 30 s, jittered). */
  backoffMs?: { min: number; max: number };
  /** Server-side watch timeout (default 5–10 min, randomized); the watch then resumes from the last version. */
  watchTimeoutSeconds?: number;
  pageSize?: number;
  /** Shrinks each object before it is stored (what the cache's readers never look at); managedFields always go. */
  trim?(object: unknown): void;
}

export interface Informer<T> {
  onChange(handler: (key: string, object: T | undefined) => void): void;
  /** Resolves once the first list is in memory. */
  start(): Promise<void>;
  stop(): void;
  get(key: string): T | undefined;
  list(): T[];
  readonly synced: boolean;
}

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: Meta & { code?: number; message?: string };
}

class StallError extends Error {}
class GoneError extends Error {}

export const objectKey = (o: Meta): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

type Named = { metadata?: { name?: string; namespace?: string } };

class SharedInformer<T extends Named> implements Informer<T> {
  private readonly options: InformerOptions;
  private readonly fieldSelector: string | undefined;
  private readonly store = new Map<string, T>();
  private readonly handlers: Array<(key: string, object: T | undefined) => void> = [];
  private readonly life = new AbortController();
  private resourceVersion = '';
  private started: Promise<void> | undefined;
  private listed = false;

  constructor(options: InformerOptions) {
    this.options = options;
    this.fieldSelector = options.name === undefined ? undefined : `metadata.name=${options.name}`;
  }

  onChange(handler: (key: string, object: T | undefined) => void): void {
    this.handlers.push(handler);
  }

  start(): Promise<void> {
    this.started ??= new Promise<void>((resolve, reject) => {
      this.life.signal.addEventListener(
        'abort',
        () => reject(new Error(`informer for ${this.options.path} stopped before it synced`)),
        { once: true },
      );
      void this.run(resolve);
    });
    return this.started;
  }

  stop(): void {
    this.life.abort();
  }

  get synced(): boolean {
    return this.listed;
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  private slim(object: T): T {
    withoutManagedFields(object);
    this.options.trim?.(object);
    return object;
  }

  private emit(key: string, object: T | undefined): void {
    for (const handler of this.handlers) handler(key, object);
  }

  /** The one named object; the watch then starts at the newest version ('') and sends it first. */
  private async getNamed(): Promise<{ items: T[]; listVersion: string }> {
    try {
      return {
        items: [
          this.slim(
            await getJson<T>(this.options.kube, `${this.options.path}/${this.options.name}`, {}, this.life.signal),
          ),
        ],
        listVersion: '',
      };
    } catch (error) {
      if (isNotFound(error)) return { items: [], listVersion: '' };
      throw error;
    }
  }

  private async listAll(): Promise<{ items: T[]; listVersion: string }> {
    const { kube, path, labelSelector } = this.options;
    const items: T[] = [];
    let cont: string | undefined;
    let listVersion: string;
    do {
      const page = await getJson<{ items: T[]; metadata?: { continue?: string; resourceVersion?: string } }>(
        kube,
        path,
        { labelSelector, limit: this.options.pageSize ?? 500, continue: cont },
        this.life.signal,
      );
      for (const item of page.items) items.push(this.slim(item));
      cont = page.metadata?.continue || undefined;
      listVersion = page.metadata?.resourceVersion ?? '';
    } while (cont);
    return { items, listVersion };
  }

  private async relist(): Promise<void> {
    const { items, listVersion } = this.options.name === undefined ? await this.listAll() : await this.getNamed();
    const changed: string[] = [];
    const fresh = new Map(items.map((item) => [objectKey(item as Meta), item]));
    for (const [key, item] of fresh) {
      if (versionOf(this.store.get(key)) !== versionOf(item)) changed.push(key);
      this.store.set(key, item);
    }
    const gone = [...this.store.keys()].filter((key) => !fresh.has(key));
    for (const key of gone) this.store.delete(key);
    this.resourceVersion = listVersion;
    for (const key of changed) this.emit(key, this.store.get(key));
    for (const key of gone) this.emit(key, undefined);
  }

  private apply(event: WatchEvent): void {
    const object = event.object;
    if (event.type === 'ERROR') {
      if (object.code === 410) throw new GoneError(object.message ?? 'resource version too old');
      throw new HttpError(object.code ?? 0, object.message ?? 'watch error');
    }
    if (object.metadata?.resourceVersion) this.resourceVersion = object.metadata.resourceVersion;
    if (event.type === 'BOOKMARK') return;
    const key = objectKey(object);
    if (event.type === 'DELETED') {
      this.store.delete(key);
      this.emit(key, undefined);
    } else if (versionOf(this.store.get(key)) !== object.metadata?.resourceVersion) {
      const stored = this.slim(object as unknown as T);
      this.store.set(key, stored);
      this.emit(key, stored);
    }
  }

  private async watchOnce(): Promise<void> {
    const { kube, path, labelSelector } = this.options;
    const stallMs = this.options.stallTimeoutMs ?? 150_000;
    const watch = new AbortController();
    const stopWatch = () => watch.abort(new Error('stopped'));
    this.life.signal.addEventListener('abort', stopWatch, { once: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => watch.abort(new StallError(`no event or bookmark for ${stallMs} ms`)), stallMs);
    };
    const timeoutSeconds = this.options.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
    const query: Query = {
      watch: 1,
      allowWatchBookmarks: true,
      resourceVersion: this.resourceVersion,
      labelSelector,
      fieldSelector: this.fieldSelector,
      timeoutSeconds,
    };
    try {
      arm();
      await streamJsonLines(kube, path, query, (e) => this.apply(e as WatchEvent), watch.signal, arm);
    } catch (error) {
      throw watch.signal.reason instanceof StallError ? watch.signal.reason : error;
    } finally {
      clearTimeout(timer);
      this.life.signal.removeEventListener('abort', stopWatch);
    }
  }

  private async run(onSynced: () => void): Promise<void> {
    let needList = true;
    let failures = 0;
    while (!this.life.signal.aborted) {
      try {
        if (needList) {
          await this.relist();
          needList = false;
          if (!this.listed) {
            this.listed = true;
            onSynced();
          }
        }
        await this.watchOnce();
        failures = 0;
        this.options.logger.debug({ path: this.options.path }, 'watch closed by the server; resuming');
      } catch (error) {
        if (this.life.signal.aborted) return;
        const reason = restartReason(error);
        if (reason !== 'error') needList = true;
        failures++;
        await this.backOff(reason, error, failures);
      }
    }
  }

  private async backOff(reason: string, error: unknown, failures: number): Promise<void> {
    const backoff = this.options.backoffMs ?? { min: 200, max: 30_000 };
    this.options.onRestart?.(reason);
    const ceiling = Math.min(backoff.max, backoff.min * 2 ** Math.min(failures - 1, 20));
    const delay = reason === 'gone' ? 0 : ceiling / 2 + Math.random() * (ceiling / 2);
    this.options.logger.warn(
      { path: this.options.path, reason, err: error, retryInMs: Math.round(delay) },
      'informer restarting',
    );
    await sleep(delay, this.life.signal);
  }
}

const versionOf = (o: unknown) => (o as Meta | undefined)?.metadata?.resourceVersion;

/** gone (410: relist), stall (silent watch: relist) or error (resume from the last version). */
function restartReason(error: unknown): 'gone' | 'stall' | 'error' {
  if (error instanceof GoneError || (error instanceof HttpError && error.code === 410)) return 'gone';
  return error instanceof StallError ? 'stall' : 'error';
}

export function createInformer<T extends Named>(options: InformerOptions): Informer<T> {
  return new SharedInformer<T>(options);
}
