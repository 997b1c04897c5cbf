// What one PullEvent does to its pull request's record, and the message it sends the phone. Pure.
// An event is acted on once: its key joins `record.seen`; a copy (a redelivery, the poll telling
// the same) finds its key there and changes nothing. An event about a head the pull request has
// already moved past (GitHub told its successor) is stale: remembered, not told.
import type { Redactor } from '../../common/log.ts';
import { FIX_CHECK_RUNS_MAX } from '../../common/session/forge-schema.ts';
import { bindReplies, type QuickReply } from '../chat/buttons.ts';
import type { Part } from '../outbound/owed.ts';
import { DETAILS_EXCERPT, NOTICE_EXCERPT, fromGitHub, lineFromGitHub, pullText } from '../pull-text.ts';
import { hasKey, hasSeen, noticeId } from '../pulls/keys.ts';
import { PULL_NOTICES_KEPT, PULL_SEEN_KEPT, type PullEvent, type PullNotice, type PullRecord } from '../pulls/types.ts';

/** What became of an event: told (a notice to send), recorded (no message), or not acted on. */
export type EventOutcome = 'told' | 'recorded' | 'seen' | 'stale' | 'notOpen';

export interface Applied {
  record: PullRecord;
  outcome: EventOutcome;
  /** the notice that tells of this event (new, or made earlier and maybe not yet sent) */
  notice?: PullNotice;
}

/** The quick replies of a notice that asks for an answer (titled as typed, like a request's). */
const ANSWERS: QuickReply[] = ['fix', 'ignore', 'details'].map((reply) => ({ label: reply, reply }));
const ANSWERED_KINDS = new Set<PullEvent['kind']>(['checksFailed', 'changesRequested', 'reviewComments']);

/** `pr-<8 hex>-<seq>`: the next notice id of the record. */
const nextNoticeId = (record: PullRecord) => noticeId(record, Number(record.notices.at(-1)?.id.split('-')[2] ?? 0) + 1);

const headOf = (event: PullEvent) => ('headSha' in event ? event.headSha : undefined);

/** About a head GitHub already told us was replaced (its headMoved seen, and not the current head). */
function isStale(record: PullRecord, event: PullEvent): boolean {
  const head = headOf(event);
  return event.kind !== 'headMoved' && !!head && head !== record.headSha && hasSeen(record, `head:${head}`);
}

/** A head the event replaces, remembered (`head:<sha>`) so that late news about it is known stale. */
function replacedHead(record: PullRecord, event: PullEvent): string[] {
  const replaced = event.kind === 'headMoved' && record.headSha !== event.headSha ? `head:${record.headSha}` : '';
  return replaced && record.headSha && !hasSeen(record, replaced) ? [replaced] : [];
}

/** The record's state after the event, and whether the phone hears of it. */
function changed(record: PullRecord, event: PullEvent): { record: PullRecord; tell: boolean } {
  switch (event.kind) {
    case 'headMoved':
      return { record: { ...record, headSha: event.headSha }, tell: false };
    case 'merged':
    case 'closed':
      return { record: { ...record, state: event.kind, fixing: undefined }, tell: true };
    case 'checksPassed': {
      const afterFix = !!record.fixing && record.fixing.headSha !== event.headSha;
      return { record: afterFix ? { ...record, fixing: undefined } : record, tell: afterFix };
    }
    default:
      return { record, tell: true };
  }
}

/** The longer text *details* sends. */
function detailsOf(record: PullRecord, event: PullEvent, redact: Redactor): string | undefined {
  if (event.kind === 'checksFailed')
    return event.checks
      .map((c) =>
        pullText.checkDetails(
          record.number,
          record.url,
          lineFromGitHub(c.name, redact),
          event.headSha,
          fromGitHub(c.excerpt, redact, DETAILS_EXCERPT),
        ),
      )
      .join('\n\n');
  if (event.kind === 'changesRequested' || event.kind === 'reviewComments')
    return pullText.reviewDetails(
      record.number,
      record.url,
      lineFromGitHub(event.reviewer, redact),
      event.headSha,
      fromGitHub(event.gist, redact, DETAILS_EXCERPT),
    );
  return undefined;
}

function noticeOf(record: PullRecord, event: PullEvent, at: string, redact: Redactor): PullNotice {
  const notice: PullNotice = { id: nextNoticeId(record), kind: event.kind, key: event.key, at, sent: false };
  const head = headOf(event);
  if (head) notice.headSha = head;
  if (event.kind === 'checksFailed') notice.checkRuns = event.checks.map((c) => c.id);
  if (event.kind === 'changesRequested' || event.kind === 'reviewComments') notice.reviewId = event.reviewId;
  const details = detailsOf(record, event, redact);
  if (details) notice.details = details;
  return notice;
}

/**
 * A failing check on a head the phone was already told of a failure on: its notices with this run
 * added to that notice's (unanswered: *fix* then covers it too), or undefined. A CI matrix is one message.
 */
function joinedFailure(record: PullRecord, event: PullEvent): PullNotice[] | undefined {
  if (event.kind !== 'checksFailed') return undefined;
  const told = record.notices.findLast((n) => n.kind === 'checksFailed' && n.headSha === event.headSha);
  if (!told) return undefined;
  if (told.answered) return record.notices;
  const checkRuns = [...new Set([...(told.checkRuns ?? []), ...event.checks.map((c) => c.id)])];
  return record.notices.map((n) => (n === told ? { ...n, checkRuns: checkRuns.slice(0, FIX_CHECK_RUNS_MAX) } : n));
}

/** The record after `event`, the outcome, and the notice to send (if any). `at`: now, ISO. */
export function applyEvent(record: PullRecord, event: PullEvent, at: string, redact: Redactor): Applied {
  if (hasSeen(record, event.key))
    return { record, outcome: 'seen', notice: record.notices.find((n) => n.key && hasKey([n.key], event.key)) };
  const seen = [...record.seen, ...replacedHead(record, event), event.key].slice(-PULL_SEEN_KEPT);
  if (record.state !== 'open') return { record: { ...record, seen }, outcome: 'notOpen' };
  if (isStale(record, event)) return { record: { ...record, seen }, outcome: 'stale' };
  const next = changed(record, event);
  if (!next.tell) return { record: { ...next.record, seen }, outcome: 'recorded' };
  const joined = joinedFailure(record, event);
  if (joined) return { record: { ...next.record, seen, notices: joined }, outcome: 'recorded' };
  const notice = noticeOf(record, event, at, redact);
  const notices = [...record.notices, notice].slice(-PULL_NOTICES_KEPT);
  return { record: { ...next.record, seen, notices }, outcome: 'told', notice };
}

/** The record with the notice marked as sent. */
export const markSent = (record: PullRecord, noticeId: string): PullRecord => ({
  ...record,
  notices: record.notices.map((n) => (n.id === noticeId ? { ...n, sent: true } : n)),
});

function textOf(record: PullRecord, event: PullEvent, redact: Redactor): string {
  const { number, repoName } = record;
  switch (event.kind) {
    case 'checksFailed': {
      const [check] = event.checks;
      const name = event.checks.map((c) => lineFromGitHub(c.name, redact)).join(', ');
      return pullText.checksFailed(number, repoName, name, fromGitHub(check?.excerpt ?? '', redact, NOTICE_EXCERPT));
    }
    case 'changesRequested':
    case 'reviewComments':
      return pullText[event.kind](
        number,
        repoName,
        lineFromGitHub(event.reviewer, redact),
        fromGitHub(event.gist, redact, NOTICE_EXCERPT),
        event.comments,
      );
    case 'checksPassed':
      return pullText.checksPassed(number, repoName);
    case 'merged':
    case 'closed':
      return pullText[event.kind](number, repoName, lineFromGitHub(event.by ?? '', redact));
    case 'headMoved':
      return '';
  }
}

/** The one message of a notice: its text, with *fix* / *ignore* / *details* bound to it where it asks. */
export function noticeMessage(record: PullRecord, event: PullEvent, notice: PullNotice, redact: Redactor): Part {
  const text = textOf(record, event, redact);
  return ANSWERED_KINDS.has(event.kind) ? { text, actions: bindReplies(notice.id, ANSWERS) } : { text };
}
