// The egress proxy's callers and how each proves who it is. One install key (TETHER_EGRESS_KEY, held
// by the controller and the egress proxy) derives every credential, so the proxy checks a caller by
// computing its password again; nothing is stored.
//
// - A runner Pod's supervisor: user `runner.<pod>`, password HMAC(key, runner/<namespace>/<pod>/<uid>),
//   bound to that one Pod (a later Pod of the same name has another uid). The controller writes it to
//   the Pod's own Secret `<pod>-egress`, which the runner container alone mounts
//   (TETHER_EGRESS_TOKEN_FILE); the proxy accepts it while that Pod exists and runs.
// - A Session's agent: user `agent.<session>`, password HMAC(supervisor password, agent/<session>).
//   The supervisor derives it for each Session it runs and gives it to Claude Code's environment
//   only; the proxy accepts it while that Session is active and bound to that Pod (status.podName),
//   and that Pod exists with the uid the password was derived with.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The shortest key accepted (the chart generates 48 random characters). */
export const EGRESS_KEY_MIN_LENGTH = 32;

export type EgressCaller = { kind: 'supervisor'; pod: string } | { kind: 'agent'; session: string };

const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const PREFIX = { supervisor: 'runner.', agent: 'agent.' } as const;

const mac = (key: string, text: string) => createHmac('sha256', key).update(text).digest('base64url');

/** The supervisor's password for the runner Pod `pod` (of uid `uid`) of the runner namespace. */
export function supervisorPassword(key: string, namespace: string, pod: string, uid: string): string {
  if (key.length < EGRESS_KEY_MIN_LENGTH)
    throw new Error(`an egress key needs at least ${EGRESS_KEY_MIN_LENGTH} characters`);
  if (!uid) throw new Error(`the runner Pod ${pod} has no uid yet`);
  return mac(key, `runner/${namespace}/${pod}/${uid}`);
}

/** The agent's password for one Session, derived from its Pod's supervisor password. */
export const agentPassword = (supervisorPass: string, session: string): string =>
  mac(supervisorPass, `agent/${session}`);

/** The proxy user name a caller sends. */
export const usernameOf = (caller: EgressCaller): string =>
  caller.kind === 'supervisor' ? `${PREFIX.supervisor}${caller.pod}` : `${PREFIX.agent}${caller.session}`;

/** Who a proxy user name claims to be, or undefined for anything else (it comes from the network). */
export function parseUsername(user: string): EgressCaller | undefined {
  for (const kind of ['supervisor', 'agent'] as const) {
    if (!user.startsWith(PREFIX[kind])) continue;
    const name = user.slice(PREFIX[kind].length);
    if (!NAME.test(name)) return undefined;
    return kind === 'supervisor' ? { kind, pod: name } : { kind, session: name };
  }
  return undefined;
}

/** Compares a sent password with the expected one in constant time. */
export function samePassword(sent: string, expected: string): boolean {
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `http://user:password@host:port` for a proxy URL without credentials (HTTP_PROXY's form). */
export function proxyUrlWith(proxyUrl: string, caller: EgressCaller, password: string): string {
  const url = new URL(proxyUrl);
  url.username = encodeURIComponent(usernameOf(caller));
  url.password = encodeURIComponent(password);
  return url.toString().replace(/\/$/, '');
}
