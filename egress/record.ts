// Every proxied connection or request, when it ends or is refused: the metrics, a log line without
// credentials, and a `connection` event on the Session's stream (the supervisor folds it into
// status.egress). A supervisor's connection goes to the streams of the Sessions its Pod runs.
import type { Logger } from '../common/log.ts';
import type { Asks } from './asks.ts';
import type { Caller, SessionsView } from './callers.ts';
import type { EgressMetrics } from './metrics.ts';
import type { Target } from './target.ts';

export interface Outcome {
  allowed: boolean;
  bytes: number;
  reason?: string;
}

export type RecordConnection = (caller: Caller, target: Target | undefined, outcome: Outcome) => void;

export function recorder(metrics: EgressMetrics, asks: Asks, sessions: SessionsView, logger: Logger): RecordConnection {
  return (caller, target, outcome) => {
    const decision = !target ? 'malformed' : outcome.allowed ? 'allowed' : 'refused';
    metrics.connections.inc({ caller: caller.kind, decision });
    if (outcome.bytes) metrics.bytes.inc({ caller: caller.kind }, outcome.bytes);
    const who = caller.kind === 'agent' ? { session: caller.session } : { pod: caller.pod };
    logger.info({ caller: caller.kind, ...who, host: target?.host, port: target?.port, ...outcome }, 'connection');
    if (!target) return;
    const event = {
      type: 'connection' as const,
      caller: caller.kind,
      host: target.host,
      port: target.port,
      allowed: outcome.allowed,
      bytes: outcome.bytes,
      ...(outcome.reason ? { reason: outcome.reason } : {}),
      at: new Date().toISOString(),
    };
    const streams =
      caller.kind === 'agent'
        ? [caller.session]
        : asks.withStreams().filter((s) => sessions.get(s)?.podName === caller.pod);
    for (const session of streams) asks.send(session, event);
  };
}
