// The Grafana dashboard parses, has the panels the issues ask for, and each query (read by Prometheus'
// own parser) is scoped to one install by the namespace and job variables and selects only metrics
// (and labels, and label values) that the controller's and the relay's real output has.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { PROMLINT_SETUP_TIMEOUT, promlintBin, selectorsOf, type Selector } from '../support/promlint.ts';
import { HELM_SETUP_TIMEOUT, find, helmBin, render } from './chart-render.ts';
import { SCRAPE_LABELS, exportedFamilies, selectorProblems, type Exported } from './metric-outputs.ts';

const DASHBOARD = 'charts/tether/dashboards/tether.json';

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
interface Variable {
  name: string;
  type: string;
  query?: { query: string };
  includeAll?: boolean;
}
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Variable[] };
};
const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));
/** Grafana's range variables are not PromQL: a duration stands in for them. */
const promql = (expr: string) => expr.replaceAll('$__rate_interval', '5m');

let exported: Map<string, Exported>;
let selectors: Selector[][];
beforeAll(async () => {
  promlintBin();
  exported = await exportedFamilies();
  selectors = selectorsOf(exprs.map(({ expr }) => promql(expr)));
}, PROMLINT_SETUP_TIMEOUT);

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

  it('has the panels issues 7 and 25 list', () => {
    const titles = dashboard.panels.map((p) => p.title.toLowerCase());
    for (const wanted of [
      'approvals waiting now',
      'work-queue depth',
      'webhook latency',
      'inbound backlog',
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

  it('has namespace and job variables, the job one chosen within the namespace', () => {
    const variable = (name: string) => dashboard.templating.list.find((v) => v.name === name);
    expect(variable('namespace')).toMatchObject({ type: 'query' });
    expect(variable('job')).toMatchObject({ type: 'query', includeAll: true });
    expect(variable('job')!.query!.query).toContain('namespace=~"$namespace"');
    for (const name of ['namespace', 'job']) {
      const [found] = selectorsOf([variable(name)!.query!.query.replace(/^label_values\((.*), \w+\)$/, '$1')]);
      expect(found!.length, name).toBeGreaterThan(0);
    }
  });

  it('filters every query by the namespace and job variables', () => {
    selectors.forEach((found, i) => {
      expect(found.length, exprs[i]!.panel).toBeGreaterThan(0);
      for (const { name, matchers } of found) {
        const where = `${exprs[i]!.panel}: ${name}`;
        expect(matchers, where).toContainEqual({ label: 'namespace', op: '=~', value: '$namespace' });
        expect(matchers, where).toContainEqual({ label: 'job', op: '=~', value: '$job' });
      }
    });
  });

  it('selects only metrics, labels and label values the components export', () => {
    expect(exported.size).toBeGreaterThan(15);
    const problems = selectors.flatMap((found, i) =>
      found.flatMap((selector) => selectorProblems(selector, exported).map((p) => `${exprs[i]!.panel}: ${p}`)),
    );
    expect(problems).toEqual([]);
  });

  it('groups only by labels those metrics carry', () => {
    selectors.forEach((found, i) => {
      const { panel, expr } = exprs[i]!;
      const labels = found.flatMap(({ name }) => [...(exported.get(name.replace(/_bucket$/, ''))?.labels ?? [])]);
      for (const [, list] of expr.matchAll(/\bby \(([^)]*)\)/g))
        for (const label of list!.split(',').map((l) => l.trim()))
          expect(SCRAPE_LABELS.has(label) || labels.includes(label), `${panel}: by ${label}`).toBe(true);
    });
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
