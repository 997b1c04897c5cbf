// Who is calling: the Basic credential of a proxied request (Proxy-Authorization) or of a supervisor
// API request (Authorization), checked against the live Sessions and runner Pods. Passwords are derived
// again from the install key (common/egress/credentials.ts) and compared in constant time; none is
// stored or logged.
import { agentPassword, parseUsername, samePassword, supervisorPassword } from '../common/egress/credentials.ts';
import { isActive } from '../common/session/state-machine.ts';
import type { Phase } from '../common/session/schema.ts';

/** The narrow view of Sessions the proxy needs (an informer in production, a map in unit tests). */
export interface SessionView {
  phase?: Phase;
  podName?: string;
  repoUrl?: string;
}

export interface SessionsView {
  get(name: string): SessionView | undefined;
  /** Called with each Session whose view changed (undefined: deleted). */
  onChange(handler: (name: string, view: SessionView | undefined) => void): void;
}

/** The narrow view of a runner Pod: its uid, and whether it is done (Succeeded, Failed or being deleted). */
export interface PodView {
  uid: string;
  done: boolean;
}

/** The runner namespace's Pods by name (an informer in production, a map in unit tests). */
export interface PodsView {
  get(name: string): PodView | undefined;
}

/** The Pods' view, told of each change (undefined: deleted). */
export interface WatchedPods extends PodsView {
  onChange(handler: (name: string, view: PodView | undefined) => void): void;
}

/** Who called, and the uid of the runner Pod its credential was derived for. */
export type Caller =
  { kind: 'agent'; session: string; pod: string; uid: string } | { kind: 'supervisor'; pod: string; uid: string };

/** Whether the caller's Pod is still the one its credential was made for, running. */
export const podStillRuns = (pods: PodsView, caller: Caller): boolean => runningUid(pods, caller.pod) === caller.uid;

export interface CredentialContext {
  key: string;
  runnerNamespace: string;
  sessions: SessionsView;
  pods: PodsView;
}

/** The user and password of a `Basic` header value, or undefined for anything else. */
export function basicCredentials(header: string | undefined): { user: string; password: string } | undefined {
  const match = /^basic +([A-Za-z0-9+/=]{1,1024})\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const text = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0) return undefined;
  return { user: safe(text.slice(0, colon)), password: safe(text.slice(colon + 1)) };
}

/** Clients percent-encode the URL's user (HTTP_PROXY=http://agent.s:pw@…); some send it as written. */
function safe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A Session the agent's credential stands for right now: active and bound to a Pod. */
export const liveBinding = (view: SessionView | undefined): string | undefined =>
  view && isActive(view.phase) && view.podName ? view.podName : undefined;

/** The uid of the runner Pod named `pod` while it exists and is not done, else undefined. */
const runningUid = (pods: PodsView, pod: string): string | undefined => {
  const view = pods.get(pod);
  return view && !view.done ? view.uid : undefined;
};

/**
 * The caller a header proves, or undefined (no credential, junk, a wrong password, a Session not live,
 * its Pod or the supervisor's gone, done or another of the same name).
 */
export function authenticate(header: string | undefined, context: CredentialContext): Caller | undefined {
  const sent = basicCredentials(header);
  if (!sent) return undefined;
  const claimed = parseUsername(sent.user);
  if (!claimed) return undefined;
  const pod = claimed.kind === 'supervisor' ? claimed.pod : liveBinding(context.sessions.get(claimed.session));
  const uid = pod && runningUid(context.pods, pod);
  if (!pod || !uid) return undefined;
  const supervisor = supervisorPassword(context.key, context.runnerNamespace, pod, uid);
  if (claimed.kind === 'supervisor')
    return samePassword(sent.password, supervisor) ? { kind: 'supervisor', pod, uid } : undefined;
  const expected = agentPassword(supervisor, claimed.session);
  return samePassword(sent.password, expected) ? { kind: 'agent', session: claimed.session, pod, uid } : undefined;
}
