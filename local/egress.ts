// The egress proxy of the local stack (egress/main.ts, a process like the relay and the controller) on
// loopback, with a key made once and kept in the state folder. Everything the local stack runs is on
// loopback, so loopback is not among the blocked ranges; the supervisor may reach the forge(s), the
// GitHub stand-in and the model upstream; the agent's list is the caller's (make dev's TETHER_EGRESS_ALLOW …).
import { join } from 'node:path';
import { DEFAULT_BLOCKED_CIDRS } from '../egress/cidrs.ts';
import { hostEnv } from './config.ts';
import { freePort } from './control-plane/control-plane.ts';
import { keptSecret } from './private-files.ts';

/**
 * The ranges of 127.0.0.0/8 besides 127.0.0.1 (24 of them): the stack's listeners are on 127.0.0.1, and a
 * listener on every interface would answer at any other loopback address too.
 */
export function otherLoopbackV4(): string[] {
  const one = (127 << 24) | 1;
  const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  const ranges: string[] = [];
  for (let bits = 32; bits >= 9; bits--) {
    const sibling = (one ^ (1 << (32 - bits))) & (bits === 32 ? -1 : ~((1 << (32 - bits)) - 1));
    ranges.push(`${dotted(sibling >>> 0)}/${bits}`);
  }
  return ranges;
}

/**
 * Loopback, which every listener of the local stack is on, is not blocked here (the chart blocks it): only
 * 127.0.0.1 and ::1 are open; the rest of 127.0.0.0/8 stays blocked.
 */
const LOOPBACK_CIDRS = ['127.0.0.0/8', '::1/128'];
export const LOCAL_BLOCKED_CIDRS = [
  ...DEFAULT_BLOCKED_CIDRS.filter((cidr) => !LOOPBACK_CIDRS.includes(cidr)),
  ...otherLoopbackV4(),
];

export interface LocalEgress {
  port: number;
  /** The proxy's URL without credentials (the controller's TETHER_EGRESS_URL). */
  url: string;
  /** The install's egress key (TETHER_EGRESS_KEY of the proxy and the controller). */
  key: string;
}

/** Where the stack's proxy listens, and its key (made once, kept in `<state>/egress-key`). */
export async function localEgress(stateDir: string): Promise<LocalEgress> {
  const port = await freePort();
  return { port, url: `http://127.0.0.1:${port}`, key: await keptSecret(join(stateDir, 'egress-key')) };
}

export interface EgressEnvInput {
  kubeconfig: string;
  namespace: string;
  runnerNamespace: string;
  egress: LocalEgress;
  /** The repository host list (the controller's TETHER_REPO_HOSTS): the forges the agent may only read from. */
  repoHosts: string;
  /** The URLs the supervisor reaches: the forge(s), the GitHub API, the model upstream. */
  supervisorUrls: string[];
  /** The stack's own loopback ports (control plane, relay, controller, GitHub stand-in): denied to the agent. */
  ownPorts: number[];
  /** The caller's settings (the agent's list, repository additions, asking): they win, but add to the deny list. */
  env?: Record<string, string>;
}

/**
 * The deny entries of the stack's own ports, under each name of loopback (the proxy denies by name): nobody asks the
 * phone about them, nor can a tap on it open them to the agent. The proxy's deny list holds for the supervisor too,
 * so a port on the supervisor's list (the GitHub stand-in, a model upstream on loopback) is left out.
 */
export function ownPortsDenied(ports: number[], supervisorAllow: string): string[] {
  const supervisorPorts = new Set(supervisorAllow.split(',').map((entry) => Number(/:(\d+)$/.exec(entry)?.[1])));
  return [...new Set(ports)]
    .filter((port) => !supervisorPorts.has(port))
    .flatMap((port) => [`127.0.0.1:${port}`, `[::1]:${port}`, `localhost:${port}`]);
}

/** The allowlist entry of a URL's host and port (`host:port`, or the host alone for 80/443); none for a folder. */
function entryOf(url: string): string[] {
  if (url.startsWith('/')) return [];
  const { hostname, port } = new URL(url);
  return [port ? `${hostname}:${port}` : hostname];
}

/** The supervisor's list: the forge hosts (a folder is no host), and the host of each URL given. */
export function supervisorEntries(repoHosts: string, urls: string[]): string {
  const forges = repoHosts.split(',').filter((host) => host && !host.startsWith('/'));
  return [...new Set([...forges, ...urls.flatMap(entryOf)])].join(',');
}

export function egressEnv(input: EgressEnvInput): Record<string, string> {
  const supervisorAllow = supervisorEntries(input.repoHosts, input.supervisorUrls);
  return {
    ...hostEnv(),
    KUBECONFIG: input.kubeconfig,
    TETHER_NAMESPACE: input.namespace,
    TETHER_RUNNER_NAMESPACE: input.runnerNamespace,
    TETHER_EGRESS_PORT: String(input.egress.port),
    TETHER_EGRESS_LISTEN: '127.0.0.1',
    TETHER_EGRESS_KEY: input.egress.key,
    TETHER_REPO_HOSTS: input.repoHosts,
    TETHER_EGRESS_SUPERVISOR_ALLOW: supervisorAllow,
    TETHER_EGRESS_BLOCKED_CIDRS: LOCAL_BLOCKED_CIDRS.join(','),
    ...input.env,
    TETHER_EGRESS_DENY: [
      ...ownPortsDenied([input.egress.port, ...input.ownPorts], supervisorAllow),
      ...(input.env?.TETHER_EGRESS_DENY ?? '').split(',').filter(Boolean),
    ].join(','),
  };
}
