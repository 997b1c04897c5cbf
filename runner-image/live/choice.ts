// The choice of a live runner's next Session. The controller binds a Session to a live Pod by writing
// its status (phase Starting, podName) and only then names it in the phone's Role; the runner looks
// at each name newly in the Role once and runs the Session only when its status names this Pod.
import type { V1Role } from '@kubernetes/client-node';
import { GROUP, PLURAL, type Session } from '../../common/session/schema.ts';

/** The Sessions the phone's Role lets its runners read: the names of its `get` rule on `sessions`. */
export function grantedSessions(role: V1Role | undefined): string[] {
  const rule = role?.rules?.find(
    (r) => r.apiGroups?.includes(GROUP) && r.resources?.includes(PLURAL) && r.verbs.includes('get'),
  );
  return rule?.resourceNames ?? [];
}

/** The granted names not looked at yet, in the Role's order. */
export const unseenSessions = (role: V1Role | undefined, seen: ReadonlySet<string>): string[] =>
  grantedSessions(role).filter((name) => !seen.has(name));

/** A Session for this Pod to run: bound here (status.podName) and waiting for its runner (Starting). */
export function boundHere(session: Session | undefined, podName: string): session is Session {
  return session?.status?.podName === podName && session.status.phase === 'Starting';
}

const startOf = (s: Session) => new Date(s.status?.startTime ?? s.metadata.creationTimestamp ?? 0).getTime();

/**
 * Of the Sessions found bound here, the one to run next: the earliest bound. The controller binds one
 * at a time (never while a Session runs here), so there is one unless it erred.
 */
export function nextSession(found: readonly Session[]): Session | undefined {
  return [...found].sort((a, b) => startOf(a) - startOf(b))[0];
}
