// status.egress: the egress proxy's connection events folded into one record per caller and
// destination, counts and bytes summed, the latest refusal's reason kept; the most recent records
// only (LIMITS.egressRecords). Pure.
import type { ConnectionEvent } from '../../common/egress/protocol.ts';
import { canonicalHost } from '../../common/egress/hosts.ts';
import { truncate } from '../../common/session/display.ts';
import { LIMITS } from '../../common/session/schema.ts';
import type { EgressRecord } from '../../common/session/status-schema.ts';

const REASON_CHARS = 200;

const sameRecord = (r: EgressRecord, e: ConnectionEvent) =>
  r.caller === e.caller && r.host === e.host && r.port === e.port;

/** Whether an event from the proxy can be recorded as the schema takes it (the stream is a peer's words). */
function recordable(e: ConnectionEvent): boolean {
  return (
    (e.caller === 'agent' || e.caller === 'supervisor') &&
    typeof e.host === 'string' &&
    canonicalHost(e.host) === e.host &&
    Number.isInteger(e.port) &&
    e.port >= 1 &&
    e.port <= 65535 &&
    Number.isSafeInteger(e.bytes) &&
    e.bytes >= 0 &&
    typeof e.at === 'string' &&
    !Number.isNaN(Date.parse(e.at))
  );
}

/** The records with one more connection; the record it updates moves to the end (the most recent). */
export function foldEgress(records: readonly EgressRecord[], e: ConnectionEvent): EgressRecord[] {
  if (!recordable(e)) return [...records];
  const before = records.find((r) => sameRecord(r, e));
  const reason = !e.allowed && typeof e.reason === 'string' ? truncate(e.reason, REASON_CHARS) : before?.reason;
  const next: EgressRecord = {
    host: e.host,
    port: e.port,
    caller: e.caller,
    allowed: (before?.allowed ?? 0) + (e.allowed ? 1 : 0),
    refused: (before?.refused ?? 0) + (e.allowed ? 0 : 1),
    bytes: (before?.bytes ?? 0) + (e.allowed ? e.bytes : 0),
    lastAt: new Date(e.at).toISOString(),
    ...(reason ? { reason } : {}),
  };
  return [...records.filter((r) => r !== before), next].slice(-LIMITS.egressRecords);
}
