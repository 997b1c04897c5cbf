// The controller's Prometheus metrics, on its own Registry. No phone or session labels.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from '../common/process-metrics.ts';
import { PHASES, type Session } from '../common/session/schema.ts';
import type { WorkQueueHooks } from '../common/kube/work-queue.ts';
import { isTerminal, Reason } from '../common/session/state-machine.ts';
import { CONDITION_FINISHED } from './conditions.ts';
import { phaseDeadline, type Timeouts } from './decide.ts';
import type { PassResult } from './reconcile.ts';

const SESSION_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];
const FAST_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What the metrics take from the Sessions' passes. */
export interface SessionObserver {
  finished(session: Session, outcome: string, seconds: number): void;
  started(seconds: number): void;
  /** A Session admitted: a runner Pod made for it (cold) or the phone's live one bound (warm). */
  admitted(start: 'cold' | 'warm'): void;
  /** A running Session's lost runner Pod replaced. */
  replaced(): void;
  approvalWait(seconds: number): void;
}

export interface ControllerMetrics {
  registry: Registry;
  observer: SessionObserver;
  /** Observes what one reconcile pass of `key` did (its result). */
  passed(key: string, result: PassResult): void;
  queueHooks: WorkQueueHooks;
  reconciled(result: 'success' | 'requeue' | 'error', seconds: number): void;
  watchRestart(resource: string, reason: string): void;
  setLeader(leading: boolean): void;
}

/** Session metrics: counts by phase, and what the reconcile observes of each Session. */
function sessionMetrics(registers: Registry[], sessions: () => Session[]): SessionObserver {
  new Gauge({
    name: 'tether_sessions',
    help: 'Sessions known to the controller, by phase.',
    labelNames: ['phase'],
    registers,
    collect() {
      const counts = new Map<string, number>(PHASES.map((p) => [p, 0]));
      counts.set('New', 0);
      for (const s of sessions()) {
        const phase = s.status?.phase ?? 'New';
        counts.set(phase, (counts.get(phase) ?? 0) + 1);
      }
      for (const [phase, n] of counts) this.set({ phase }, n);
    },
  });
  const duration = new Histogram({
    name: 'tether_session_duration_seconds',
    help: 'Start (or creation) to completion of finished Sessions, by outcome phase.',
    labelNames: ['outcome'],
    buckets: SESSION_BUCKETS,
    registers,
  });
  const cost = new Counter({
    name: 'tether_session_cost_usd_total',
    help: 'Agent cost in USD of finished Sessions (status.result.costUsd), by outcome phase.',
    labelNames: ['outcome'],
    registers,
  });
  const startup = new Histogram({
    name: 'tether_session_startup_seconds',
    help:
      'Session creation to runner Pod created or live one bound ' +
      "(includes time queued behind the phone's earlier command).",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800],
    registers,
  });
  const startedTotal = new Counter({
    name: 'tether_sessions_started_total',
    help: "Sessions admitted, by start: cold (a runner Pod made) or warm (the phone's live runner Pod bound).",
    labelNames: ['start'],
    registers,
  });
  for (const start of ['cold', 'warm']) startedTotal.inc({ start }, 0);
  const replacements = new Counter({
    name: 'tether_runner_replacements_total',
    help: "Running Sessions' lost runner Pods replaced by a new one that resumes the run.",
    registers,
  });
  const approvalWait = new Histogram({
    name: 'tether_approval_wait_seconds',
    help: "Time a pending request waited for the user's decision (as seen by the controller).",
    buckets: SESSION_BUCKETS,
    registers,
  });
  return {
    finished: (session, outcome, seconds) => {
      duration.observe({ outcome }, Math.max(0, seconds));
      const usd = session.status?.result?.costUsd;
      if (typeof usd === 'number' && usd > 0) cost.inc({ outcome }, usd);
    },
    started: (seconds) => startup.observe(seconds),
    admitted: (start) => startedTotal.inc({ start }),
    replaced: () => replacements.inc(),
    approvalWait: (seconds) => approvalWait.observe(seconds),
  };
}

/** Sessions the controller should have ended at their start or approval deadline, by phase. */
function deadlineMetrics(registers: Registry[], sessions: () => Session[], timeouts: Timeouts): void {
  new Gauge({
    name: 'tether_sessions_past_deadline',
    help: 'Sessions still Starting or AwaitingApproval after their start or approval deadline, by phase.',
    labelNames: ['phase'],
    registers,
    collect() {
      const now = Date.now();
      const counts = new Map<string, number>([
        ['Starting', 0],
        ['AwaitingApproval', 0],
      ]);
      for (const s of sessions()) {
        const deadline = phaseDeadline(s, timeouts);
        if (deadline !== undefined && now >= deadline) counts.set(s.status!.phase!, counts.get(s.status!.phase!)! + 1);
      }
      for (const [phase, n] of counts) this.set({ phase }, n);
    },
  });
}

const secondsBetween = (from: number, to: number) => Math.max(0, to - from) / 1000;

/**
 * The Session metrics read off each pass's result: the start (the pass made the runner Pod), the
 * end (the pass wrote the Finished condition), and how long each pending request waited (its id
 * changed or the Session left AwaitingApproval between passes).
 */
function passObserver(observer: SessionObserver): (key: string, result: PassResult) => void {
  const approvals = new Map<string, { id: string; createdAt: string }>();
  return (key, { session, written, podCreated, now }) => {
    if (!session) {
      approvals.delete(key);
      return;
    }
    const status = session.status;
    const open = status?.phase === 'AwaitingApproval' ? status.pending : undefined;
    const seen = approvals.get(key);
    if (seen && seen.id !== open?.id) {
      observer.approvalWait(secondsBetween(Date.parse(seen.createdAt), now.getTime()));
      approvals.delete(key);
    }
    if (open && !seen) approvals.set(key, { id: open.id, createdAt: open.createdAt });
    const created = new Date(session.metadata.creationTimestamp ?? now).getTime();
    const start = written?.reason === Reason.RunnerBound ? 'warm' : podCreated ? 'cold' : undefined;
    if (written?.reason === Reason.RunnerReplaced) observer.replaced();
    else if (start) {
      observer.started(secondsBetween(created, now.getTime()));
      observer.admitted(start);
    }
    const wasFinished = written?.before.conditions?.some((c) => c.type === CONDITION_FINISHED);
    if (written && isTerminal(written.after.phase) && !wasFinished) {
      const begin = written.after.startTime ? Date.parse(written.after.startTime) : created;
      observer.finished(session, written.after.phase!, (Date.parse(written.after.completionTime!) - begin) / 1000);
    }
  };
}

export function createMetrics(
  sessions: () => Session[],
  options: { defaultMetrics?: boolean; timeouts: Timeouts },
): ControllerMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectProcessMetrics(registry);
  const registers = [registry];

  const observer = sessionMetrics(registers, sessions);
  deadlineMetrics(registers, sessions, options.timeouts);
  const reconciles = new Counter({
    name: 'tether_reconcile_total',
    help: 'Reconcile passes by result.',
    labelNames: ['result'],
    registers,
  });
  const reconcileSeconds = new Histogram({
    name: 'tether_reconcile_duration_seconds',
    help: 'Duration of one reconcile pass.',
    buckets: FAST_BUCKETS,
    registers,
  });
  const depth = new Gauge({ name: 'tether_workqueue_depth', help: 'Keys waiting in the work queue.', registers });
  const queueLatency = new Histogram({
    name: 'tether_workqueue_queue_duration_seconds',
    help: 'Time a key waited in the queue before a worker took it.',
    buckets: FAST_BUCKETS,
    registers,
  });
  const backedOff = new Counter({
    name: 'tether_workqueue_retries_total',
    help: 'Keys re-queued with backoff after an error.',
    registers,
  });
  const restarts = new Counter({
    name: 'tether_watch_restarts_total',
    help: 'Informer restarts by resource and reason (error, gone, stall).',
    labelNames: ['resource', 'reason'],
    registers,
  });
  const leader = new Gauge({ name: 'tether_leader', help: '1 while this replica holds the leader Lease.', registers });
  leader.set(0);
  for (const result of ['success', 'requeue', 'error']) reconciles.inc({ result }, 0);

  return {
    registry,
    observer,
    passed: passObserver(observer),
    queueHooks: {
      depth: (n) => depth.set(n),
      latency: (ms) => queueLatency.observe(ms / 1000),
      retry: () => backedOff.inc(),
    },
    reconciled(result, seconds) {
      reconciles.inc({ result });
      reconcileSeconds.observe(seconds);
    },
    watchRestart: (resource, reason) => restarts.inc({ resource, reason }),
    setLeader: (leading) => leader.set(leading ? 1 : 0),
  };
}
