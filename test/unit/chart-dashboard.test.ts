// The Grafana dashboard parses, has the panels the issue asks for, and queries only metrics (and
// labels, and label values) that the controller's and the relay's registries really export.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { createMetrics as controllerMetrics } from '../../controller/metrics.ts';
import { createMetrics as relayMetrics } from '../../relay/metrics.ts';
import { HELM_SETUP_TIMEOUT, find, helmBin, render } from './chart-render.ts';

const DASHBOARD = 'charts/tether/dashboards/tether.json';
/** Labels Prometheus adds when it scrapes (ServiceMonitor target labels), plus histogram buckets. */
const SCRAPE_LABELS = new Set(['le', 'pod', 'instance', 'job', 'namespace', 'service', 'container']);
/**
 * Queried by the dashboard but not exported yet: the controller has no cost metric. Each entry must
 * really be missing (the test below fails once it lands, so the entry is removed then).
 */
const PENDING = new Set<string>([]);

interface Target {
  expr: string;
  legendFormat?: string;
}
interface Panel {
  title: string;
  type: string;
  targets: Target[];
  gridPos: { x: number; y: number; w: number; h: number };
}
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string }[] };
};
const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));

interface Exported {
  labels: Set<string>;
  source: string;
}
const exported = new Map<string, Exported>();
function collect(registry: Registry, sourceDir: string): void {
  const source = readdirSync(sourceDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(join(sourceDir, f), 'utf8'))
    .join('\n');
  for (const metric of registry.getMetricsAsArray()) {
    const m = metric as unknown as { name: string; labelNames: string[] };
    exported.set(m.name, { labels: new Set(m.labelNames), source });
  }
}
collect(controllerMetrics(() => [], { defaultMetrics: false }).registry, 'controller');
collect(relayMetrics().registry, 'relay');

/** Metric names in a PromQL expression, histogram series folded to the histogram's name. */
function metricsOf(expr: string): string[] {
  return [...new Set([...expr.matchAll(/\b(tether_[a-z0-9_]+)\b/g)].map((m) => m[1]!))].map((name) => {
    const base = name.replace(/_(bucket|sum|count)$/, '');
    return base !== name && exported.has(base) ? base : name;
  });
}

describe('Grafana dashboard', () => {
  it('is a dashboard with a Prometheus data source variable and non-overlapping panels', () => {
    expect(dashboard.uid).toBe('tether-overview');
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource' }),
    );
    const cells = new Set<string>();
    for (const { gridPos: g, title } of dashboard.panels) {
      for (let x = g.x; x < g.x + g.w; x++)
        for (let y = g.y; y < g.y + g.h; y++) {
          expect(cells.has(`${x},${y}`), `${title} overlaps another panel`).toBe(false);
          cells.add(`${x},${y}`);
        }
      expect(g.x + g.w, title).toBeLessThanOrEqual(24);
    }
  });

  it('has the panels issue 7 lists', () => {
    const titles = dashboard.panels.map((p) => p.title.toLowerCase());
    for (const wanted of [
      'sessions by phase',
      'run duration by outcome',
      'approval wait',
      'start-up latency',
      'cost per day',
      'webhook errors',
      'send errors',
    ]) {
      expect(
        titles.some((t) => t.startsWith(wanted)),
        wanted,
      ).toBe(true);
    }
  });

  it('queries only metrics the controller and relay export', () => {
    expect(exported.size).toBeGreaterThan(15);
    const missing = exprs.flatMap(({ panel, expr }) =>
      metricsOf(expr)
        .filter((m) => !exported.has(m) && !PENDING.has(m))
        .map((m) => `${panel}: ${m}`),
    );
    expect(missing).toEqual([]);
  });

  it('lists as pending only metrics that are still missing', () => {
    for (const name of PENDING)
      expect(exported.has(name), `${name} is exported now: remove it from PENDING`).toBe(false);
  });

  it('groups and filters only by labels those metrics carry', () => {
    for (const { panel, expr } of exprs) {
      const metrics = metricsOf(expr).filter((m) => exported.has(m));
      const used = [
        ...[...expr.matchAll(/\bby \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((l) => l.trim())),
        ...[...expr.matchAll(/[{,]\s*([a-z_]+)\s*(=~|!~|!=|=)/g)].map((m) => m[1]!),
      ];
      for (const label of used.filter((l) => !SCRAPE_LABELS.has(l))) {
        expect(
          metrics.some((m) => exported.get(m)!.labels.has(label)),
          `${panel}: label ${label} in ${expr}`,
        ).toBe(true);
      }
    }
  });

  it('matches only label values the code emits', () => {
    for (const { panel, expr } of exprs) {
      for (const [, metric, , values] of expr.matchAll(/(tether_[a-z0-9_]+)\{[a-z_]+(=~|=)"([^"]+)"\}/g)) {
        const { source } = exported.get(metricsOf(metric!)[0]!)!;
        for (const value of values!.split('|'))
          expect(source, `${panel}: value "${value}" of ${metric}`).toMatch(new RegExp(`['"]${value}['"]`));
      }
    }
  });
});

describe('dashboard ConfigMap', () => {
  beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

  it('carries the dashboard JSON unchanged with the grafana_dashboard label', async () => {
    const configMap = find(await render(), 'ConfigMap', 'dashboard') as unknown as {
      metadata: { labels: Record<string, string> };
      data: Record<string, string>;
    };
    expect(configMap.metadata.labels.grafana_dashboard).toBe('1');
    expect(JSON.parse(configMap.data['tether.json']!)).toEqual(dashboard);
  });

  it('is left out when metrics.dashboard.enabled=false', async () => {
    expect(
      (await render({ metrics: { dashboard: { enabled: false } } })).some((o) => o.metadata.name.endsWith('dashboard')),
    ).toBe(false);
  });
});
