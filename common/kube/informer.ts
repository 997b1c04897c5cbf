// A level-based informer: list + watch one collection (or get + watch one object by name), keep it
// in memory, tell handlers the current object (or undefined when gone) for every key that changed.
// Survives watch errors (jittered backoff), 410 Gone (relist) and silent stalls (watchdog relist).
import type pino from 'pino';
import type { KubeAccess } from './connection.ts';
import { isNotFound } from './errors.ts';
import { getJson, HttpError, streamJsonLines, type Query } from './raw.ts';

type Meta = { metadata?: { name?: string; namespace?: string; resourceVersion?: string; managedFields?: unknown } };

/** managedFields are server-side-apply bookkeeping nobody reads from a cache; they can outweigh the object. */
const slim = <T>(object: T): T => {
  delete (object as Meta).metadata?.managedFields;
  return object;
};

export interface InformerOptions {
  kube: KubeAccess;
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

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => {
    clearTimeout(timer);
    resolve();
  }, { once: true });
});

export function createInformer<T extends { metadata?: { name?: string; namespace?: string } }>(options: InformerOptions): Informer<T> {
  const { kube, path, labelSelector, name, logger } = options;
  const fieldSelector = name === undefined ? undefined : `metadata.name=${name}`;
  const stallMs = options.stallTimeoutMs ?? 150_000;
  const backoff = options.backoffMs ?? { min: 200, max: 30_000 };
  const pageSize = options.pageSize ?? 500;
  const store = new Map<string, T>();
  const handlers: Array<(key: string, object: T | undefined) => void> = [];
  const life = new AbortController();
  let resourceVersion = '';
  let synced = false;
  let started: Promise<void> | undefined;

  const emit = (key: string, object: T | undefined) => {
    for (const handler of handlers) handler(key, object);
  };
  const versionOf = (o: T | undefined) => (o as Meta | undefined)?.metadata?.resourceVersion;

  /** The one named object; the watch then starts at the newest version ('') and sends it first. */
  async function getNamed(): Promise<{ items: T[]; listVersion: string }> {
    try {
      return { items: [slim(await getJson<T>(kube, `${path}/${name}`, {}, life.signal))], listVersion: '' };
    } catch (error) {
      if (isNotFound(error)) return { items: [], listVersion: '' };
      throw error;
    }
  }

  async function listAll(): Promise<{ items: T[]; listVersion: string }> {
    const items: T[] = [];
    let cont: string | undefined;
    let listVersion: string;
    do {
      const page = await getJson<{ items: T[]; metadata?: { continue?: string; resourceVersion?: string } }>(
        kube, path, { labelSelector, limit: pageSize, continue: cont }, life.signal);
      for (const item of page.items) items.push(slim(item));
      cont = page.metadata?.continue || undefined;
      listVersion = page.metadata?.resourceVersion ?? '';
    } while (cont);
    return { items, listVersion };
  }

  async function relist(): Promise<void> {
    const { items, listVersion } = name === undefined ? await listAll() : await getNamed();
    const changed: string[] = [];
    const fresh = new Map(items.map((item) => [objectKey(item as Meta), item]));
    for (const [key, item] of fresh) {
      if (versionOf(store.get(key)) !== versionOf(item)) changed.push(key);
      store.set(key, item);
    }
    const gone = [...store.keys()].filter((key) => !fresh.has(key));
    for (const key of gone) store.delete(key);
    resourceVersion = listVersion;
    for (const key of changed) emit(key, store.get(key));
    for (const key of gone) emit(key, undefined);
  }

  function apply(event: WatchEvent): void {
    const object = event.object;
    if (event.type === 'ERROR') {
      if (object.code === 410) throw new GoneError(object.message ?? 'resource version too old');
      throw new HttpError(object.code ?? 0, object.message ?? 'watch error');
    }
    if (object.metadata?.resourceVersion) resourceVersion = object.metadata.resourceVersion;
    if (event.type === 'BOOKMARK') return;
    const key = objectKey(object);
    if (event.type === 'DELETED') {
      store.delete(key);
      emit(key, undefined);
    } else if (versionOf(store.get(key)) !== object.metadata?.resourceVersion) {
      store.set(key, slim(object as unknown as T));
      emit(key, object as unknown as T);
    }
  }

  async function watchOnce(): Promise<void> {
    const watch = new AbortController();
    const stopWatch = () => watch.abort(new Error('stopped'));
    life.signal.addEventListener('abort', stopWatch, { once: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => watch.abort(new StallError(`no event or bookmark for ${stallMs} ms`)), stallMs);
    };
    const timeoutSeconds = options.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
    const query: Query = { watch: 1, allowWatchBookmarks: true, resourceVersion, labelSelector, fieldSelector, timeoutSeconds };
    try {
      arm();
      await streamJsonLines(kube, path, query, (e) => apply(e as WatchEvent), watch.signal, arm);
    } catch (error) {
      throw watch.signal.reason instanceof StallError ? watch.signal.reason : error;
    } finally {
      clearTimeout(timer);
      life.signal.removeEventListener('abort', stopWatch);
    }
  }

  async function run(onSynced: () => void): Promise<void> {
    let needList = true;
    let failures = 0;
    while (!life.signal.aborted) {
      try {
        if (needList) {
          await relist();
          needList = false;
          if (!synced) {
            synced = true;
            onSynced();
          }
        }
        await watchOnce();
        failures = 0;
        logger.debug({ path }, 'watch closed by the server; resuming');
      } catch (error) {
        if (life.signal.aborted) return;
        const gone = error instanceof GoneError || (error instanceof HttpError && error.code === 410);
        const reason = gone ? 'gone' : error instanceof StallError ? 'stall' : 'error';
        if (gone || reason === 'stall') needList = true;
        options.onRestart?.(reason);
        failures++;
        const ceiling = Math.min(backoff.max, backoff.min * 2 ** Math.min(failures - 1, 20));
        const delay = gone ? 0 : ceiling / 2 + Math.random() * (ceiling / 2);
        logger.warn({ path, reason, err: error, retryInMs: Math.round(delay) }, 'informer restarting');
        await sleep(delay, life.signal);
      }
    }
  }

  return {
    onChange(handler) {
      handlers.push(handler);
    },
    start() {
      started ??= new Promise<void>((resolve, reject) => {
        life.signal.addEventListener('abort', () => reject(new Error(`informer for ${path} stopped before it synced`)), { once: true });
        void run(resolve);
      });
      return started;
    },
    stop() {
      life.abort();
    },
    get: (key) => store.get(key),
    list: () => [...store.values()],
    get synced() {
      return synced;
    },
  };
}
