// Prometheus' own lint on the controller's and the relay's /metrics as their processes serve them
// (`node controller/main.ts`, `node relay/main.ts` on the real API server) after real traffic: a
// signed command that becomes a Session the controller starts, and a forged webhook. The dashboard's
// and the alert rules' queries select only metric families this output has.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { controllerProcess, type ControllerProcess } from '../support/faults.ts';
import {
  PROMLINT_SETUP_TIMEOUT,
  familiesOf,
  familyOf,
  lintMetrics,
  promlintBin,
  selectorsOf,
} from '../support/promlint.ts';
import { RelayProcess, deliverWebhook } from '../support/relay-faults.ts';
import { postWebhook, signedWebhook } from '../support/twilio-webhook.ts';
import { helmBin, render } from '../unit/chart-render.ts';

const PHONE = '+14155557101';
let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;
let fake: FakeTwilio;
let relay: RelayProcess;
let controller: ControllerProcess;

beforeAll(async () => {
  helmBin();
  promlintBin();
  ({ kc, ns, sessions } = await sessionNamespace('metrics-lint'));
  fake = await startFakeTwilio();
  controller = await controllerProcess(inject('kubeconfig'), ns, mkdtempSync(join(tmpdir(), 'metrics-lint-')));
  relay = await RelayProcess.start({ namespace: ns, twilio: fake, phones: [PHONE] });
  await controller.ready;
}, PROMLINT_SETUP_TIMEOUT);
afterAll(async () => {
  await relay?.stop();
  await controller?.proc.stop();
  await fake?.close();
  if (kc) await deleteNamespace(kc, ns);
});

const scrape = async (url: string) => (await fetch(url)).text();

/** Both outputs once the traffic shows in them. */
async function afterTraffic(): Promise<{ controller: string; relay: string }> {
  await deliverWebhook([relay], fake.authToken, PHONE, 'make the navbar sticky');
  const forged = signedWebhook('not-the-auth-token', 'https://tether.faults/webhook', { from: PHONE, body: 'hi' });
  expect((await postWebhook(`${relay.url}/webhook`, forged)).status).toBe(403);
  await eventually(async () => {
    const [session] = (await sessions.list(ns)).items;
    expect(session?.status?.phase).toBe('Starting');
  }, 30_000);
  return eventually(async () => {
    const outputs = { controller: await scrape(controller.metricsUrl), relay: await scrape(`${relay.url}/metrics`) };
    expect(outputs.controller).toMatch(/^tether_reconcile_total\{result="requeue"\} [1-9]/m);
    expect(outputs.controller).toMatch(/^tether_sessions\{phase="Starting"\} 1$/m);
    expect(outputs.relay).toMatch(/^tether_relay_signature_failures_total 1$/m);
    expect(outputs.relay).toMatch(/^tether_relay_webhook_duration_seconds_count [1-9]/m);
    return outputs;
  }, 30_000);
}

describe('metrics of the running components', () => {
  it('pass promlint, and every dashboard and alert query selects a family they export', async () => {
    const outputs = await afterTraffic();
    expect(lintMetrics(outputs)).toEqual([]);

    const families = new Map([...familiesOf(outputs.controller), ...familiesOf(outputs.relay)]);
    expect(families.get('process_resident_memory_bytes')).toBe('gauge');
    const dashboard = JSON.parse(readFileSync('charts/tether/dashboards/tether.json', 'utf8')) as {
      panels: { targets: { expr: string }[] }[];
    };
    const rule = (await render({ metrics: { prometheusRule: { enabled: true } } })).find(
      (o) => o.kind === 'PrometheusRule',
    ) as unknown as { spec: { groups: { rules: { expr: string }[] }[] } };
    const exprs = [
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr.replaceAll('$__rate_interval', '5m'))),
      ...rule.spec.groups.flatMap((g) => g.rules.map((r) => r.expr)),
    ];
    const names = selectorsOf(exprs).flatMap((selectors) => selectors.map((s) => s.name));
    expect(names.length).toBeGreaterThanOrEqual(exprs.length);
    expect(names.filter((name) => !familyOf(name, families))).toEqual([]);
  });
});
