// What one record, one phone and the whole ConfigMap may hold: GitHub's text and a collaborator's
// activity grow a record, and one phone may open many pull requests, but none of it may crowd out
// another phone's records. Applied to every write (records.ts), so each bound is kept in one place.
// Pure.
import { FIX_CHECK_RUNS_MAX } from '../../common/session/forge-schema.ts';
import { eventKeyDigest } from './keys.ts';
import { PULL_NOTICES_KEPT, PULL_SEEN_KEPT, type PullNotice, type PullRecord } from './types.ts';

/** A record's JSON, at most: the oldest notices, then the oldest event keys, go first. */
export const PULL_RECORD_MAX_BYTES = 8 * 1024;
/** A notice's *details* as kept. */
export const NOTICE_DETAILS_CHARS = 600;
/** Any other string of a notice, and each value of the poll's state. */
const FIELD_CHARS = 100;
/** Open records per phone: a new one beyond it drops the phone's least recently chosen. */
export const PULL_OPEN_PER_PHONE = 20;

/** At most `max` UTF-16 units, a cut marked with an ellipsis and never splitting a surrogate pair. */
export function cutTo(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, '')}…`;
}

const optional = <T>(name: string, value: T | undefined) => (value === undefined ? {} : { [name]: value });

function boundedNotice(notice: PullNotice): PullNotice {
  return {
    ...notice,
    id: cutTo(notice.id, FIELD_CHARS),
    at: cutTo(notice.at, FIELD_CHARS),
    ...optional('key', notice.key === undefined ? undefined : eventKeyDigest(notice.key)),
    ...optional('headSha', notice.headSha === undefined ? undefined : cutTo(notice.headSha, FIELD_CHARS)),
    ...optional('checkRuns', notice.checkRuns?.slice(0, FIX_CHECK_RUNS_MAX)),
    ...optional('details', notice.details === undefined ? undefined : cutTo(notice.details, NOTICE_DETAILS_CHARS)),
  };
}

const bytesOf = (record: PullRecord) => Buffer.byteLength(JSON.stringify(record));

/**
 * The record within PULL_RECORD_MAX_BYTES: event keys digested (the last PULL_SEEN_KEPT), notices
 * (the last PULL_NOTICES_KEPT) and the poll's state cut; then the oldest notices go, keeping the
 * newest, then the oldest keys. A record still too large (only its own fields, which a Session's
 * schema bounds) is refused: that one write fails, no other.
 */
export function boundedRecord(record: PullRecord): PullRecord {
  const seen = [...new Set(record.seen.map(eventKeyDigest))].slice(-PULL_SEEN_KEPT);
  const notices = record.notices.slice(-PULL_NOTICES_KEPT).map(boundedNotice);
  const poll =
    record.poll && Object.fromEntries(Object.entries(record.poll).map(([k, v]) => [k, cutTo(v, FIELD_CHARS)]));
  const bounded: PullRecord = { ...record, seen, notices, ...optional('poll', poll) };
  while (bytesOf(bounded) > PULL_RECORD_MAX_BYTES) {
    if (bounded.notices.length > 1) bounded.notices = bounded.notices.slice(1);
    else if (bounded.seen.length > 1) bounded.seen = bounded.seen.slice(1);
    else throw new Error(`the record of pull request #${record.number} exceeds ${PULL_RECORD_MAX_BYTES} bytes`);
  }
  return bounded;
}
