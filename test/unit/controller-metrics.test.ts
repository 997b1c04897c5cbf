import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Pending } from '../../common/session/status-schema.ts';
import { createApp } from '../../controller/app.ts';
import { createMetrics } from '../../controller/metrics.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';

// Prometheus naming rules (https://prometheus.io/docs/practices/naming/), as promtool checks them.
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function families(text: string) {
  const types = new Map<string, string>();
  const samples: Array<{ name: string; labels: string[] }> = [];
  for (const line of text.split('\n')) {
    const type = line.match(/^# TYPE (\S+) (\S+)$/);
    if (type) types.set(type[1]!, type[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const sample = line.match(/^([^{\s]+)(?:\{([^}]*)\})?\s/);
    samples.push({
      name: sample![1]!,
      labels: [...(sample![2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)].map((m) => m[1]!),
    });
  }
  return { types, samples };
}

describe('controller metrics', () => {
  const sessions = [
    testSession({ phase: 'Working' }),
    testSession({ phase: 'Queued' }),
    testSession({ phase: 'Queued' }),
    testSession(),
  ];
  const timeouts = unitConfig();
  const metrics = createMetrics(() => sessions, { timeouts });

  it(`exposes the metrics of the issue, with names that \
follow the Prometheus rules and no phone or session labels`, async () => {
    metrics.observer.finished(sessions[0]!, 'Succeeded', 192);
    metrics.reconciled('success', 0.01);
    metrics.watchRestart('sessions', 'stall');
    metrics.queueHooks.retry!('ns/a', 5, new Error('x'));
    const { types, samples } = families(await metrics.registry.metrics());
    const expected: Array<[string, string]> = [
      ['tether_sessions', 'gauge'],
      ['tether_session_duration_seconds', 'histogram'],
      ['tether_session_startup_seconds', 'histogram'],
      ['tether_approval_wait_seconds', 'histogram'],
      ['tether_reconcile_total', 'counter'],
      ['tether_reconcile_duration_seconds', 'histogram'],
      ['tether_workqueue_depth', 'gauge'],
      ['tether_workqueue_queue_duration_seconds', 'histogram'],
      ['tether_workqueue_retries_total', 'counter'],
      ['tether_watch_restarts_total', 'counter'],
      ['tether_leader', 'gauge'],
      ['tether_sessions_past_deadline', 'gauge'],
      ['tether_session_cost_usd_total', 'counter'],
      ['tether_sessions_started_total', 'counter'],
      ['tether_runner_replacements_total', 'counter'],
    ];
    for (const [name, type] of expected) expect(types.get(name), name).toBe(type);
    for (const [name, type] of types) {
      expect(name).toMatch(METRIC_NAME);
      if (type === 'counter') expect(name, `${name} is a counter`).toMatch(/_total$/);
      else expect(name, `${name} must not end in _total`).not.toMatch(/_total$/);
      expect(name).not.toMatch(/_(count|sum|bucket)$/);
      if (/seconds|bytes/.test(name)) expect(name).toMatch(/_(seconds|bytes)(_total)?$/);
      expect(name, 'seconds, not milliseconds').not.toMatch(/millis|_ms$/);
    }
    for (const sample of samples) {
      for (const label of sample.labels) {
        expect(label).toMatch(LABEL_NAME);
        expect(label.startsWith('__')).toBe(false);
        expect(['phone', 'session', 'name', 'phone_hash']).not.toContain(label);
      }
    }
  });

  it('adds the agent cost of each finished Session to tether_session_cost_usd_total by outcome', async () => {
    const own = createMetrics(() => [], { timeouts });
    const paid = (usd?: number) => ({
      ...sessions[0]!,
      status: { ...sessions[0]!.status, result: usd === undefined ? {} : { costUsd: usd } },
    });
    own.observer.finished(paid(0.41), 'Succeeded', 10);
    own.observer.finished(paid(0.09), 'Succeeded', 10);
    own.observer.finished(paid(1.5), 'Failed', 10);
    own.observer.finished(paid(), 'Cancelled', 10);
    const text = await own.registry.metrics();
    expect(text).toMatch(/^tether_session_cost_usd_total\{outcome="Succeeded"\} 0\.5$/m);
    expect(text).toMatch(/^tether_session_cost_usd_total\{outcome="Failed"\} 1\.5$/m);
    expect(text).not.toMatch(/^tether_session_cost_usd_total\{outcome="Cancelled"\}/m);
  });

  it(`counts admissions by start (a Pod made: cold; the live Pod bound: warm) and replaced Pods, from \
the passes`, async () => {
    const own = createMetrics(() => [], { timeouts });
    const session = testSession({ created: '2026-11-22T08:00:00Z' });
    const now = new Date('2026-11-22T08:00:01Z');
    const written = (reason: string) => ({ before: {}, after: {}, reason });
    own.passed('ns/a', { now, session, podCreated: true, written: written('PodCreated') });
    own.passed('ns/b', { now, session, written: written('RunnerBound') });
    own.passed('ns/c', { now, session, written: written('RunnerBound') });
    own.passed('ns/d', { now, session, podCreated: true, written: written('RunnerReplaced') });
    const text = await own.registry.metrics();
    expect(text).toMatch(/^tether_sessions_started_total\{start="cold"\} 1$/m);
    expect(text).toMatch(/^tether_sessions_started_total\{start="warm"\} 2$/m);
    expect(text).toMatch(/^tether_runner_replacements_total 1$/m);
    expect(text).toMatch(/^tether_session_startup_seconds_count 3$/m);
  });

  it('counts Sessions by phase from the cache', async () => {
    const text = await metrics.registry.metrics();
    expect(text).toContain('tether_sessions{phase="Queued"} 2');
    expect(text).toContain('tether_sessions{phase="Working"} 1');
    expect(text).toContain('tether_sessions{phase="New"} 1');
    expect(text).toContain('tether_sessions{phase="Failed"} 0');
    expect(text).toContain('tether_session_duration_seconds_count{outcome="Succeeded"} 1');
    expect(text).toContain('tether_watch_restarts_total{resource="sessions",reason="stall"} 1');
  });

  it('counts Sessions Starting or AwaitingApproval past their deadline (spec.timeouts.approval first)', async () => {
    const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
    const minute = 60_000;
    const pending = (createdAt: string): Pending => ({ id: 'p1', kind: 'changes', createdAt });
    const stuck = [
      testSession({ phase: 'Starting', status: { startTime: ago(timeouts.startTimeoutMs + minute) } }),
      testSession({ phase: 'Starting', status: { startTime: ago(timeouts.startTimeoutMs - minute) } }),
      testSession({
        phase: 'AwaitingApproval',
        status: { pending: pending(ago(timeouts.defaultApprovalTimeoutMs + minute)) },
      }),
      testSession({
        phase: 'AwaitingApproval',
        status: { pending: pending(ago(2 * minute)) },
        timeouts: { approval: '1m' },
      }),
      testSession({ phase: 'AwaitingApproval', status: { pending: pending(ago(minute)) } }),
      testSession({ phase: 'Working', status: { startTime: ago(timeouts.startTimeoutMs + minute) } }),
    ];
    const text = await createMetrics(() => stuck, { timeouts, defaultMetrics: false }).registry.metrics();
    expect(text).toMatch(/^tether_sessions_past_deadline\{phase="Starting"\} 1$/m);
    expect(text).toMatch(/^tether_sessions_past_deadline\{phase="AwaitingApproval"\} 2$/m);
  });

  it('serves /metrics, /healthz and /readyz', async () => {
    let ready = false;
    const server = createApp({ registry: metrics.registry, ready: () => ready }).listen(0);
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const m = await fetch(`${base}/metrics`);
      expect(m.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await m.text()).toContain('tether_leader 0');
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      ready = true;
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
    } finally {
      server.close();
    }
  });
});
