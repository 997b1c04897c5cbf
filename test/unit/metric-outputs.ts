// The controller's and the relay's /metrics text as their processes build it (process and Node.js
// metrics included), after each metric has seen something: what the lint, dashboard and alert tests
// read. And the check those tests make of a PromQL selector against it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import { createMetrics as controllerMetrics } from '../../controller/metrics.ts';
import { createMetrics as relayMetrics } from '../../relay/metrics.ts';
import { familiesOf, familyOf, type Selector } from '../support/promlint.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';

/** Labels Prometheus adds when it scrapes (ServiceMonitor target labels), plus histogram buckets. */
export const SCRAPE_LABELS = new Set(['le', 'pod', 'instance', 'job', 'namespace', 'service', 'container']);

function controllerRegistry(): Registry {
  const sessions = [testSession({ phase: 'Working' }), testSession({ phase: 'AwaitingApproval' }), testSession()];
  const controller = controllerMetrics(() => sessions, { timeouts: unitConfig() });
  controller.observer.finished(sessions[0]!, 'Succeeded', 30);
  controller.observer.started(2);
  controller.observer.approvalWait(40);
  controller.reconciled('success', 0.01);
  controller.watchRestart('sessions', 'stall');
  controller.queueHooks.depth!(1);
  controller.queueHooks.latency!(5);
  controller.queueHooks.retry!('ns/a', 1, new Error('conflict'));
  controller.setLeader(true);
  return controller.registry;
}

function relayRegistry(): Registry {
  const relay = relayMetrics({ defaults: true });
  relay.webhookRequests.inc({ outcome: 'accepted' });
  relay.webhookDuration.observe(0.002);
  relay.signatureFailures.inc();
  relay.duplicates.inc();
  relay.inboundBacklog.set(1);
  relay.journalSync.observe(0.001);
  relay.inboundFailures.inc();
  relay.messagesSent.inc({ result: 'sent' });
  relay.sendDuration.observe(0.05);
  relay.outboundQueueDepth.set(2);
  relay.recipientsRefused.inc();
  relay.mediaUploads.inc({ outcome: 'stored' });
  return relay.registry;
}

export async function componentOutputs(): Promise<{ controller: string; relay: string }> {
  return { controller: await controllerRegistry().metrics(), relay: await relayRegistry().metrics() };
}

export interface Exported {
  type: string;
  labels: Set<string>;
  /** The component's source, where the label values it emits are written. */
  source: string;
}

function sourceOf(dir: string): string {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n');
}

/** Every metric family either component exports, with its labels. */
export async function exportedFamilies(): Promise<Map<string, Exported>> {
  const exported = new Map<string, Exported>();
  for (const [registry, dir] of [
    [controllerRegistry(), 'controller'],
    [relayRegistry(), 'relay'],
  ] as const) {
    const source = sourceOf(dir);
    const types = familiesOf(await registry.metrics());
    for (const metric of registry.getMetricsAsArray()) {
      const { name, labelNames } = metric as unknown as { name: string; labelNames: string[] };
      exported.set(name, { type: types.get(name)!, labels: new Set(labelNames), source });
    }
  }
  return exported;
}

/**
 * What is wrong with one selector of a query: a metric neither component exports, a label its metric
 * does not carry, or a label value its code never writes (alternatives of =~ checked one by one).
 */
export function selectorProblems(selector: Selector, exported: Map<string, Exported>): string[] {
  const types = new Map([...exported].map(([name, e]) => [name, e.type]));
  const family = familyOf(selector.name, types);
  if (!family) return [`${selector.name} is not exported`];
  const { labels, source } = exported.get(family)!;
  return selector.matchers.flatMap(({ label, op, value }) => {
    if (SCRAPE_LABELS.has(label)) return [];
    if (!labels.has(label)) return [`${family} has no label ${label}`];
    if (op !== '=' && op !== '=~') return [];
    return value
      .split('|')
      .filter((v) => !new RegExp(`['"]${v}['"]`).test(source))
      .map((v) => `${family}{${label}} is never "${v}"`);
  });
}
