// Who goes through Tether's egress proxy as whom: the agent of each Session with a password of its
// own (derived from the supervisor's), the supervisor's own git, GitHub API and model calls as
// `runner.<pod>`. The credentials sit in the proxy URL (curl and Node's http.Agent both send them as
// Proxy-Authorization: Basic).
import { agentPassword, proxyUrlWith } from '../../common/egress/credentials.ts';

export interface Egress {
  /** The proxy's URL, without credentials. */
  url: string;
  /** The supervisor's password (the file TETHER_EGRESS_TOKEN_FILE, the Pod's own Secret). */
  token: string;
  /** This runner Pod's name: the supervisor is `runner.<pod>`. */
  pod: string;
}

/** Claude Code's own loopback (its dev servers, the supervisor's model endpoint) is never proxied. */
export const AGENT_NO_PROXY = '127.0.0.1,localhost,::1';

/** The supervisor's proxy URL with its credential. */
export const supervisorProxyUrl = (egress: Egress): string =>
  proxyUrlWith(egress.url, { kind: 'supervisor', pod: egress.pod }, egress.token);

/** The proxy variables Claude Code of Session `session` gets, every spelling tools read. */
export function agentProxyEnv(egress: Egress, session: string): Record<string, string> {
  const url = proxyUrlWith(egress.url, { kind: 'agent', session }, agentPassword(egress.token, session));
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: AGENT_NO_PROXY,
    no_proxy: AGENT_NO_PROXY,
  };
}

/**
 * curl's variables for every git the supervisor runs: through the proxy always, loopback included
 * (an empty no_proxy: a forge on loopback goes through it too), the credential sent with the first
 * request (git otherwise waits for the proxy's 407 before sending it).
 */
export function supervisorGitProxy(egress: Egress): Record<string, string> {
  const url = supervisorProxyUrl(egress);
  return { http_proxy: url, https_proxy: url, no_proxy: '', GIT_HTTP_PROXY_AUTHMETHOD: 'basic' };
}
