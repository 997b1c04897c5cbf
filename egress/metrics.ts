// The egress proxy's Prometheus metrics, on a registry of its own (docs/egress.md, "Metrics").
import { Counter, Gauge, Registry } from 'prom-client';
import { collectProcessMetrics } from '../common/process-metrics.ts';

/** decision: allowed, refused (a rule or the phone), malformed (400), unauthenticated (407). */
export type DecisionLabel = 'allowed' | 'refused' | 'malformed' | 'unauthenticated';

export function createMetrics(options: { defaults?: boolean } = {}) {
  const registry = new Registry();
  let waitingNow = () => 0;
  if (options.defaults) collectProcessMetrics(registry);
  const registers = [registry];
  return {
    registry,
    /** Where the waiting gauge reads from when scraped (the Sessions' waiting connections together). */
    readWaitingFrom: (count: () => number) => {
      waitingNow = count;
    },
    connections: new Counter({
      name: 'tether_egress_connections_total',
      help: 'Proxied connections and requests by caller (agent, supervisor, unknown) and decision',
      labelNames: ['caller', 'decision'] as const,
      registers,
    }),
    bytes: new Counter({
      name: 'tether_egress_bytes_total',
      help: 'Bytes carried both ways by caller',
      labelNames: ['caller'] as const,
      registers,
    }),
    asks: new Counter({
      name: 'tether_egress_asks_total',
      help: 'Asks to the phone by answer (once, session, repository, deny, timeout, dropped)',
      labelNames: ['answer'] as const,
      registers,
    }),
    open: new Gauge({
      name: 'tether_egress_open_connections',
      help: 'Client connections open now',
      registers,
    }),
    waiting: new Gauge({
      name: 'tether_egress_waiting_connections',
      help: 'Connections waiting for the phone now',
      registers,
      collect() {
        this.set(waitingNow());
      },
    }),
    grantWriteFailures: new Counter({
      name: 'tether_egress_grant_write_failures_total',
      help: 'Repository grants kept in memory only: the grants ConfigMap could not be written',
      registers,
    }),
  };
}
export type EgressMetrics = ReturnType<typeof createMetrics>;
