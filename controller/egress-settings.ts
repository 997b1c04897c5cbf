// The egress proxy as the controller sees it (docs/controller.md, "Egress"): its URL and the install
// key from which each runner Pod's supervisor credential is derived. Both or neither; the key is
// never shown (common/config/env.ts hides variables named *KEY*).
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../common/config/env.ts';
import { httpUrl } from '../common/config/values.ts';
import { EGRESS_KEY_MIN_LENGTH } from '../common/egress/credentials.ts';
import { serviceHosts, type ServiceHost } from './runner-network.ts';

/** The variables, for the controller's schema (config.ts). */
export const EGRESS_ENV = {
  TETHER_EGRESS_URL: Type.Optional(
    httpUrl("the egress proxy's URL without credentials, e.g. http://tether-egress.tether.svc:3128"),
  ),
  TETHER_EGRESS_KEY: Type.Optional(
    Type.String({
      minLength: EGRESS_KEY_MIN_LENGTH,
      description: `the install's egress key, at least ${EGRESS_KEY_MIN_LENGTH} characters (the chart generates one)`,
    }),
  ),
};

interface EgressEnv {
  TETHER_EGRESS_URL?: string;
  TETHER_EGRESS_KEY?: string;
  TETHER_RUNNER_HTTPS_PROXY?: string;
  TETHER_RUNNER_HTTP_PROXY?: string;
  TETHER_RELAY_URL?: string;
  TETHER_NAMESPACE: string;
  TETHER_RUNNER_HOST_NETWORK: boolean;
}

export interface EgressSettings {
  /** Given to runner containers as TETHER_EGRESS_URL. */
  url: string;
  /** The install key: it derives each runner Pod's egress password (its `<pod>-egress` Secret); it goes nowhere. */
  key: string;
  /**
   * Runner Pods resolve no names (runner-network.ts): these hosts are their /etc/hosts. Absent on the
   * host network (the test tier), where no NetworkPolicy applies and the node's resolver stays.
   */
  noDns?: { hosts: ServiceHost[] };
}

function checkedUrl(text: string): string {
  const url = new URL(text);
  if (url.username || url.password) throw new ConfigError('TETHER_EGRESS_URL', 'must carry no credentials');
  if (url.protocol !== 'http:') throw new ConfigError('TETHER_EGRESS_URL', 'must be an http:// proxy URL');
  if (url.pathname !== '/' || url.search || url.hash)
    throw new ConfigError('TETHER_EGRESS_URL', 'must be http://host:port, no path or query');
  return text.replace(/\/$/, '');
}

/** The egress proxy's settings, or {} without one; refuses one variable without the other. */
export function egressSettings(env: EgressEnv): { egress?: EgressSettings } {
  const { TETHER_EGRESS_URL: url, TETHER_EGRESS_KEY: key } = env;
  if (!url && !key) return {};
  if (!url) throw new ConfigError('TETHER_EGRESS_URL', 'is needed with TETHER_EGRESS_KEY (both or neither)');
  if (!key) throw new ConfigError('TETHER_EGRESS_KEY', 'is needed with TETHER_EGRESS_URL (both or neither)');
  // The egress proxy is the runner's one way out: another proxy beside it would be a second.
  const operatorProxy = env.TETHER_RUNNER_HTTPS_PROXY ? 'TETHER_RUNNER_HTTPS_PROXY' : 'TETHER_RUNNER_HTTP_PROXY';
  if (env.TETHER_RUNNER_HTTPS_PROXY || env.TETHER_RUNNER_HTTP_PROXY) {
    throw new ConfigError(
      operatorProxy,
      'cannot be set with TETHER_EGRESS_URL: runners go out through the egress proxy',
    );
  }
  const egressUrl = checkedUrl(url);
  if (env.TETHER_RUNNER_HOST_NETWORK) return { egress: { url: egressUrl, key } };
  const urls = { TETHER_RELAY_URL: env.TETHER_RELAY_URL, TETHER_EGRESS_URL: egressUrl };
  return { egress: { url: egressUrl, key, noDns: { hosts: serviceHosts(urls, env.TETHER_NAMESPACE) } } };
}
