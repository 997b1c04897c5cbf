// Where the time of a command goes, stage by stage: marks from watches and the components' own log lines,
// each Session's, and the breakdown over a group of Sessions (cold or warm).
import type { Session } from '../common/session/schema.ts';
import { isTerminal } from '../common/session/state-machine.ts';
import { percentile } from './machine.ts';

const STAGES = [
  'sent',
  'sessionCreated',
  'podCreated',
  'Starting',
  'podRunning',
  'runnerReady',
  'pickedUp',
  'Working',
  'workspaceReady',
  'claudeStarted',
  'firstModelTurn',
  'progressInStatus',
  'onPhone',
];
const LABELS: Record<string, string> = {
  sessionCreated: 'relay: webhook → Session',
  podCreated: 'controller: Session → Pod',
  Starting: 'controller: → Starting written',
  podRunning: 'node: Pod → process started',
  runnerReady: 'runner start (imports, config)',
  pickedUp: 'live runner: bound Session picked up',
  Working: 'runner: ready → Working written',
  workspaceReady: 'runner: checkout (git) ready',
  claudeStarted: 'Claude Code spawned',
  firstModelTurn: 'Claude Code start → first model request',
  progressInStatus: 'first turn → progress in status',
  onPhone: 'relay: status → phone',
};
const LOG_STAGES: Array<[string, RegExp]> = [
  ['runnerReady', /"msg":"runner ready"/],
  ['pickedUp', /"msg":"a Session is bound here"/],
  ['workspaceReady', /"msg":"workspace ready"/],
  ['claudeStarted', /"msg":"agent started"/],
  ['firstModelTurn', /"msg":"model request"/],
];

export class StageMarks {
  /** Stage → time (ms since epoch) per Session. */
  readonly marks = new Map<string, Record<string, number>>();
  /** The Session each runner Pod serves now (a live Pod serves one after another). */
  private readonly serving = new Map<string, string>();
  /** When each live runner last said it waits for the next Session; how long each reset of its agent took. */
  readonly idleSince = new Map<string, number>();
  readonly resetMs: number[] = [];

  mark(session: string, stage: string, at = Date.now()): void {
    const m = this.marks.get(session) ?? {};
    m[stage] ??= at;
    this.marks.set(session, m);
  }

  onSession(s: Session): void {
    const name = s.metadata.name!;
    this.mark(name, 'sessionCreated');
    if (s.status?.phase) this.mark(name, s.status.phase);
    if (s.status?.progress?.length) this.mark(name, 'progressInStatus');
    if (s.status?.podName && s.status.phase && !isTerminal(s.status.phase)) this.serving.set(s.status.podName, name);
  }

  onPod(session: string | undefined, running: boolean): void {
    if (!session) return;
    this.mark(session, 'podCreated');
    if (running) this.mark(session, 'podRunning');
  }

  /** A line of the stack's output: `runner <pod>` lines count for the Session that Pod serves. */
  onLine(component: string, line: string): void {
    const pod = /^runner (.+)$/.exec(component)?.[1];
    if (!pod) return;
    if (/"msg":"agent container reset; waiting for the next Session bound here"/.test(line)) {
      this.idleSince.set(pod, Date.now());
      this.resetMs.push(Number(/"ms":(\d+)/.exec(line)?.[1]));
    }
    const session = this.serving.get(pod) ?? pod.replace(/-runner(-\d+)?$/, '');
    for (const [stage, pattern] of LOG_STAGES)
      if (pattern.test(line)) this.mark(session, stage, Number(/"time":(\d+)/.exec(line)?.[1] ?? Date.now()));
  }

  /** p50 and p99 of each stage (from the stage before it that the Session has) over `sessions`. */
  breakdown(sessions: string[]): string[] {
    const lines: string[] = [];
    for (let s = 1; s < STAGES.length; s++) {
      const deltas = sessions.flatMap((name) => {
        const m = this.marks.get(name) ?? {};
        const prev = STAGES.slice(0, s)
          .reverse()
          .find((p) => m[p] !== undefined);
        return m[STAGES[s]!] !== undefined && prev ? [m[STAGES[s]!]! - m[prev]!] : [];
      });
      if (deltas.length)
        lines.push(
          `  ${LABELS[STAGES[s]!]!.padEnd(42)} p50 ${percentile(deltas, 50)} ms   p99 ${percentile(deltas, 99)} ms`,
        );
    }
    return lines;
  }
}
