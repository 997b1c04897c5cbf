// The opt-in PrometheusRule: rendered only when metrics.prometheusRule.enabled; each alert's
// expression parses (Prometheus' own parser) and selects only metrics, labels and label values the
// components' real output has, scoped to the release's namespace and to the job the chart's
// ServiceMonitor gives that component's Service.
import { beforeAll, describe, expect, it } from 'vitest';
import { PROMLINT_SETUP_TIMEOUT, promlintBin, selectorsOf } from '../support/promlint.ts';
import { HELM_SETUP_TIMEOUT, helmBin, render, type KubeObject } from './chart-render.ts';
import { exportedFamilies, selectorProblems, type Exported } from './metric-outputs.ts';

interface Rule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}
type RuleObject = KubeObject & { spec: { groups: { name: string; rules: Rule[] }[] } };
interface Monitor {
  spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] };
}
interface Service {
  metadata: { name: string; labels: Record<string, string> };
  spec: { ports: { name: string }[] };
}

const NAMESPACE = 'obs';
let objects: KubeObject[];
let exported: Map<string, Exported>;
beforeAll(
  async () => {
    helmBin();
    promlintBin();
    exported = await exportedFamilies();
    objects = await render(
      {
        metrics: {
          prometheusRule: { enabled: true, labels: { release: 'kube-prometheus' } },
          serviceMonitor: { enabled: true },
        },
      },
      { namespace: NAMESPACE },
    );
  },
  Math.max(HELM_SETUP_TIMEOUT, PROMLINT_SETUP_TIMEOUT),
);

const rules = () =>
  (objects.find((o) => o.kind === 'PrometheusRule') as RuleObject).spec.groups.flatMap((g) => g.rules);

/** The job label Prometheus gives a component's series: the name of the Service its ServiceMonitor scrapes. */
function jobOf(component: 'controller' | 'relay'): string {
  const monitor = objects.find(
    (o) => o.kind === 'ServiceMonitor' && o.metadata.labels?.['app.kubernetes.io/component'] === component,
  ) as unknown as Monitor;
  const { matchLabels } = monitor.spec.selector;
  const services = objects.filter(
    (o) =>
      o.kind === 'Service' &&
      Object.entries(matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v) &&
      (o as unknown as Service).spec.ports.some((p) => p.name === monitor.spec.endpoints[0]!.port),
  );
  expect(services.map((s) => s.metadata.name)).toHaveLength(1);
  return services[0]!.metadata.name;
}

describe('PrometheusRule', () => {
  it('is left out by default', async () => {
    expect((await render()).some((o) => o.kind === 'PrometheusRule')).toBe(false);
  });

  it('carries the alerts the issue lists, with its labels and each a severity and a summary', () => {
    const rule = objects.find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(rule.metadata.namespace).toBe(NAMESPACE);
    expect(rule.metadata.labels?.release).toBe('kube-prometheus');
    expect(rules().map((r) => r.alert)).toEqual([
      'TetherWebhookSignatureFailures',
      'TetherSessionsStuck',
      'TetherNoControllerLeader',
      'TetherSendErrors',
    ]);
    for (const r of rules()) {
      expect(['warning', 'critical'], r.alert).toContain(r.labels.severity);
      expect(r.for, r.alert).toMatch(/^\d+m$/);
      expect(r.annotations.summary.length, r.alert).toBeGreaterThan(10);
    }
  });

  it("selects only exported metrics, labels and values, in the release's namespace and its component's job", () => {
    const found = selectorsOf(rules().map((r) => r.expr));
    const jobs = { controller: jobOf('controller'), relay: jobOf('relay') };
    found.forEach((selectors, i) => {
      const { alert } = rules()[i]!;
      expect(selectors.length, alert).toBeGreaterThan(0);
      for (const selector of selectors) {
        expect(selectorProblems(selector, exported), alert).toEqual([]);
        const job = selector.name.startsWith('tether_relay_') ? jobs.relay : jobs.controller;
        expect(selector.matchers, alert).toContainEqual({ label: 'namespace', op: '=', value: NAMESPACE });
        expect(selector.matchers, alert).toContainEqual({ label: 'job', op: '=', value: job });
      }
    });
  });
});
