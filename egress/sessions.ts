// The Sessions the proxy checks credentials against: an informer over TETHER_NAMESPACE, narrowed to
// what callers.ts reads (phase, the runner Pod, the repository).
import type pino from 'pino';
import type { KubeConnection } from '../common/kube/connection.ts';
import { createInformer, type Informer } from '../common/kube/informer.ts';
import { sessionsPath } from '../common/kube/sessions.ts';
import type { Session } from '../common/session/schema.ts';
import type { SessionsView, SessionView } from './callers.ts';

export const viewOf = (session: Session | undefined): SessionView | undefined =>
  session && {
    phase: session.status?.phase,
    podName: session.status?.podName,
    repoUrl: session.spec?.repo?.url,
  };

export interface SessionsInformer extends SessionsView {
  start(): Promise<void>;
  stop(): void;
}

export function informedSessions(kube: KubeConnection, namespace: string, logger: pino.Logger): SessionsInformer {
  const informer: Informer<Session> = createInformer<Session>({
    kube,
    path: sessionsPath(namespace),
    logger: logger.child({ informer: 'sessions' }),
    onRestart: (reason) => logger.warn({ reason }, 'session watch restarted'),
    trim: (object) => {
      const spec = (object as Session).spec as Partial<Session['spec']> | undefined;
      if (spec) delete spec.prompt;
    },
  });
  const key = (name: string) => `${namespace}/${name}`;
  return {
    get: (name) => viewOf(informer.get(key(name))),
    onChange: (handler) => informer.onChange((k, session) => handler(k.slice(k.indexOf('/') + 1), viewOf(session))),
    start: () => informer.start(),
    stop: () => informer.stop(),
  };
}
