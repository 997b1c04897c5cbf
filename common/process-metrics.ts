// prom-client's default process_* and nodejs_* metrics, unprefixed so the standard Node.js
// dashboards find them (each component is its own scrape job, so the two do not collide).
import { collectDefaultMetrics, type Registry } from 'prom-client';

/** Gauges prom-client names *_total, which Prometheus' lint rejects; the per-type gauges stay. */
const TOTAL_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of TOTAL_GAUGES) registry.removeSingleMetric(name);
}
