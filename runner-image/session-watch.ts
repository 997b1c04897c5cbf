// Keeps the runner's view of its own Session fresh: a watch on metadata.name (restarted when it
// ends, as client-node's Watch aborts healthy streams) plus a slow re-read as a stall guard.
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { GROUP, PLURAL, VERSION, type Session } from '../common/session/schema.ts';

export interface SessionWatchDeps {
  kubeConfig: KubeConfig;
  namespace: string;
  name: string;
  log: Logger;
  onSession: (s: Session) => void;
  onDeleted: () => void;
  /** Re-read interval (stall guard). */
  refresh: () => Promise<void>;
  refreshMs?: number;
}

export function watchSession(deps: SessionWatchDeps): { stop(): void } {
  const watch = new Watch(deps.kubeConfig);
  const path = `/apis/${GROUP}/${VERSION}/namespaces/${deps.namespace}/${PLURAL}`;
  let stopped = false;
  let abort: AbortController | undefined;
  let backoff = 200;

  const start = async () => {
    if (stopped) return;
    try {
      abort = await watch.watch(path, { fieldSelector: `metadata.name=${deps.name}`, allowWatchBookmarks: true }, (type, object: Session) => {
        backoff = 200;
        if (type === 'DELETED') deps.onDeleted();
        else if (type === 'ADDED' || type === 'MODIFIED') deps.onSession(object);
      }, (error: unknown) => {
        if (error && !stopped) deps.log.debug({ err: error }, 'session watch ended; restarting');
        restart();
      });
    } catch (error) {
      deps.log.warn({ err: error }, 'session watch failed to start; retrying');
      restart();
    }
  };
  const restart = () => {
    if (stopped) return;
    backoff = Math.min(backoff * 2, 5000);
    setTimeout(() => void start(), backoff).unref();
  };
  const timer = setInterval(() => {
    deps.refresh().catch((error: unknown) => deps.log.warn({ err: error }, 'session re-read failed'));
  }, deps.refreshMs ?? 5000);
  timer.unref();
  void start();

  return {
    stop() {
      stopped = true;
      clearInterval(timer);
      abort?.abort();
    },
  };
}
