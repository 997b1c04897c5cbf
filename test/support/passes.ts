// Level-based proof that the controller has looked at a Session: a marker annotation written on it,
// then a wait for a reconcile pass that began with the marker in the controller's cache to finish.
// The Session's cache is one watch stream, in order: such a pass has seen every write made before
// the marker, so after it a test may assert that nothing (more) happened — on a slow machine too.
import type { SessionClient } from '../../common/kube/sessions.ts';
import type { WorkQueueHooks } from '../../common/kube/work-queue.ts';
import type { Session } from '../../common/session/schema.ts';
import { eventually } from './eventually.ts';

const MARKER = 'test.tether.dev/marker';

export interface PassLog {
  /** The queue hooks to give the controller: `inner`'s, and a note of each pass's start and end. */
  hooks(inner: WorkQueueHooks): WorkQueueHooks;
  /** Finished reconcile passes of a Session key (namespace/name). */
  finished(key: string): number;
  /** Whether a pass of `key` that began with marker `n` (or a later one) in the cache has finished. */
  passedMarker(key: string, n: number): boolean;
}

const markerOf = (session: Session | undefined) => Number(session?.metadata.annotations?.[MARKER] ?? 0);

/** `cached` reads the controller's Session cache (set once the controller exists). */
export function createPassLog(cached: (key: string) => Session | undefined): PassLog {
  const startedWith = new Map<string, number[]>();
  const finished = new Map<string, number>();
  return {
    hooks: (inner) => ({
      ...inner,
      started: (key) => {
        inner.started?.(key);
        startedWith.set(key, [...(startedWith.get(key) ?? []), markerOf(cached(key))]);
      },
      done: (key, ms, outcome) => {
        inner.done?.(key, ms, outcome);
        finished.set(key, (finished.get(key) ?? 0) + 1);
      },
    }),
    finished: (key) => finished.get(key) ?? 0,
    passedMarker: (key, n) => (startedWith.get(key) ?? []).slice(0, finished.get(key) ?? 0).some((m) => m >= n),
  };
}

let markers = 0;

/**
 * Waits until the controller has finished a reconcile pass of each named Session that saw every write made
 * before this call. A marker write (a new annotation) asks for that pass.
 */
export async function settled(
  running: { passes: PassLog },
  sessions: SessionClient,
  namespace: string,
  names: string[],
  timeoutMs = 60_000,
): Promise<void> {
  const n = ++markers;
  await Promise.all(
    names.map((name) => sessions.patch(namespace, name, { metadata: { annotations: { [MARKER]: `${n}` } } })),
  );
  await eventually(() => {
    const waiting = names.filter((name) => !running.passes.passedMarker(`${namespace}/${name}`, n));
    if (waiting.length > 0) throw new Error(`no reconcile pass has seen marker ${n} on ${waiting.join(', ')} yet`);
  }, timeoutMs);
}
