// A real egress proxy server (egress/app.ts) for the attack tests: a faked Sessions view, a resolver
// that records every name it is asked, and rules given per test. The destination is a loopback listener.
import type { Server } from 'node:http';
import { agentPassword, supervisorPassword } from '../../common/egress/credentials.ts';
import { createLogger } from '../../common/log.ts';
import { createApp } from '../../egress/app.ts';
import { Asks } from '../../egress/asks.ts';
import type { SessionView } from '../../egress/callers.ts';
import { parseCidrs } from '../../egress/cidrs.ts';
import type { EgressConfig } from '../../egress/config.ts';
import { createMetrics } from '../../egress/metrics.ts';
import { basic, podUid, runnerPods, type FakePods } from './egress-client.ts';

export const KEY = 'egress-attack-key-'.padEnd(48, 'x');
export const RUNNERS = 'runners';
export const pw = (pod: string) => supervisorPassword(KEY, RUNNERS, pod, podUid(pod));
export const agent = (session: string, pod: string) => basic(`agent.${session}`, agentPassword(pw(pod), session));
export const supervisor = (pod: string) => basic(`runner.${pod}`, pw(pod));

/** The rules every attack starts from: nothing listed, the cluster's ranges blocked, asking on. */
export const baseRules = () => ({
  forgeHosts: [],
  allow: [],
  deny: [],
  supervisorAllow: [],
  repositories: new Map(),
  blocked: parseCidrs('10.0.0.0/8'),
  ask: true,
});

export interface Harness {
  port: number;
  /** Every name the proxy resolved, in order. */
  resolved: string[];
  setSession(name: string, view: SessionView | undefined): void;
  /** The runner Pods the proxy sees: each runs with uid podUid(name) until set otherwise. */
  pods: FakePods;
  close(): void;
}

export async function startProxy(options: {
  rules?: Partial<EgressConfig['rules']>;
  limits?: Partial<EgressConfig['limits']>;
  table: Record<string, string[]>;
}): Promise<Harness> {
  const views = new Map<string, SessionView>();
  const handlers: Array<(name: string, view: SessionView | undefined) => void> = [];
  const resolved: string[] = [];
  const pods = runnerPods();
  const limits = {
    askWaitMs: 60_000,
    maxConnections: 40,
    maxConnectionsPerSession: 4,
    maxConnectionsPerSupervisor: 4,
    maxUnauthenticated: 4,
    unauthenticatedMs: 2000,
    maxWaitingPerSession: 2,
    maxAsksPerSession: 4,
    forgeCacheMs: 1000,
    idleMs: 60_000,
    headerMs: 2000,
    maxHeaderBytes: 4096,
    grantEntriesPerRepository: 10,
    ...options.limits,
  };
  const server: Server = createApp({
    config: {
      key: KEY,
      runnerNamespace: RUNNERS,
      rules: { ...baseRules(), ...options.rules },
      limits,
    },
    sessions: { get: (n) => views.get(n), onChange: (h) => handlers.push(h) },
    pods,
    grants: { entriesFor: () => [], add: async () => undefined },
    asks: new Asks({
      askWaitMs: limits.askWaitMs,
      maxWaitingPerSession: limits.maxWaitingPerSession,
      maxAsksPerSession: limits.maxAsksPerSession,
      persistRepositoryGrant: () => undefined,
      counted: () => undefined,
    }),
    metrics: createMetrics(),
    logger: createLogger({ component: 'egress', level: 'silent' }),
    resolve: async (host) => {
      resolved.push(host);
      return options.table[host] ?? [];
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    resolved,
    pods,
    setSession: (name, view) => {
      if (view) views.set(name, view);
      else views.delete(name);
      for (const h of handlers) h(name, view);
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
