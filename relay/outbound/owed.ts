// What the phone is still owed about one Session, given what it has been told: the parts to send
// and the new delivered state. Pure; next-messages.ts adds the echo of the last choice.
import type { SessionDefaults } from '../../common/session/defaults.ts';
import { isActive, isTerminal } from '../../common/session/state-machine.ts';
import type { Media, Pending, Session } from '../../common/session/schema.ts';
import { parseDuration } from '../../common/session/display.ts';
import type { Delivered } from '../delivered-state.ts';
import { isOwnMedia } from '../media/refs.ts';
import { MESSAGE_LIMIT } from './split.ts';
import { budgetsOf, progressStep, withinSessionBudget, type BudgetOptions } from './cadence.ts';
import { cutChars, text } from '../text.ts';
import { bindReplies, type QuickReply } from '../chat/buttons.ts';
import { showHidden } from '../chat/shown.ts';

export interface Part {
  text?: string;
  actions?: QuickReply[];
  media?: Pick<Media, 'ref' | 'contentType'>;
}

export interface OwedOptions extends BudgetOptions {
  now: number;
  reminderBeforeMs: number;
  /** for a Session without its own timeouts, and the queue limit the phone is told about */
  defaults: SessionDefaults;
}

export interface Owed {
  parts: Part[];
  next: Delivered;
  /** when to look at this Session again even if nothing changes (batching, reminder) */
  wakeAt?: number;
}

/** The "still waiting" reminder: due now (a part), later (wakeAt), or never (neither). */
function reminderFor(pending: Pending, approval: string, options: OwedOptions): { part?: Part; wakeAt?: number } {
  const created = new Date(pending.createdAt).getTime();
  const deadline = created + parseDuration(approval);
  const remindAt = deadline - options.reminderBeforeMs;
  if (remindAt <= created || options.now >= deadline) return {};
  if (options.now >= remindAt) return { part: { text: text.reminder(deadline - options.now) } };
  return { wakeAt: remindAt };
}

/** The pages of each `diff <file>` answered since the phone was last told. */
function answeredDiffParts(session: Session, toldDiffs: number, answered: number): Part[] {
  const parts: Part[] = [];
  for (let request = toldDiffs + 1; request <= answered; request++) {
    const pages = (session.status?.result?.media ?? []).filter(
      (m) => m.kind === 'diff' && m.request === request && isOwnMedia(session, m),
    );
    parts.push(
      ...(pages.length
        ? pages.map((m) => ({ media: m, text: m.caption && showHidden(m.caption) }))
        : [{ text: text.diffNotDrawn(session.spec.diffRequests?.[request - 1] ?? 'that file') }]),
    );
  }
  return parts;
}

/** What the phone hears as the Session ends: its screenshots (on success), then the result. */
function endingParts(session: Session, defaults: SessionDefaults): Part[] {
  const media = session.status?.phase === 'Succeeded' ? (session.status.result?.media ?? []) : [];
  const shots = media.filter((m) => m.kind === 'screenshot' && isOwnMedia(session, m));
  return [
    ...shots.map((shot) => ({ media: shot, text: shot.caption && showHidden(shot.caption) })),
    { text: text.finished(session, defaults) },
  ];
}

export function owed(session: Session, told: Delivered, options: OwedOptions): Owed {
  const status = session.status ?? {};
  const phase = status.phase;
  const next: Delivered = { ...told };
  const parts: Part[] = [];
  let wakeAt: number | undefined;
  /** parts the Session-wide budget may drop */
  const optional = new Set<Part>();
  const pushOptional = (...more: Part[]) =>
    more.forEach((part) => {
      optional.add(part);
      parts.push(part);
    });
  const terminal = isTerminal(phase);

  if (terminal && phase === 'Cancelled' && !told.started) {
    // A queued command swept away: by the user's cancel (already acknowledged), or by a reject/timeout before it.
    if (session.spec.cancel !== true && told.done !== phase)
      parts.push({ text: text.droppedFromQueue(session.spec.prompt) });
    next.done = phase;
    return { parts, next: counted(told, next), wakeAt };
  }
  // A queued command that ended without a start (over budget, invalid) is not announced as starting.
  if ((isActive(phase) || (terminal && status.startTime)) && !told.started && told.queued) {
    parts.push({ text: text.startedFromQueue(session.metadata.name!, session.spec.prompt) });
  }
  if (isActive(phase) || terminal) next.started = true;

  const fresh = (status.progress ?? []).filter((p) => p.seq > told.seq);
  const pendingDue = phase === 'AwaitingApproval' && status.pending && status.pending.id !== told.pending;
  const mustFlush = pendingDue || (terminal && told.done !== phase);
  const budgets = budgetsOf(options);
  const progress = progressStep(fresh, told, mustFlush, options.now, budgets);
  Object.assign(next, progress.next);
  wakeAt = progress.wakeAt;
  if (progress.message) pushOptional({ text: progress.message });
  const mergeAt = parts.length;

  const pending = phase === 'AwaitingApproval' ? status.pending : undefined;
  const approval = session.spec.timeouts?.approval ?? options.defaults.timeouts.approval;
  if (pending && pendingDue) {
    if (pending.kind === 'changes') parts.push(...reviewParts(session, status.result ?? {}, pending));
    const asked = text.pending(pending, approval, session.spec.pullRequest?.number);
    parts.push({ text: asked, actions: bindReplies(pending.id, quickReplies(pending)) });
    next.pending = pending.id;
  }
  const answered = status.result?.diffAnswered ?? 0;
  pushOptional(...answeredDiffParts(session, told.diffs ?? 0, answered));
  if (answered > (told.diffs ?? 0)) next.diffs = answered;
  if (pending && told.reminded !== pending.id) {
    const reminder = reminderFor(pending, approval, options);
    if (reminder.part) pushOptional(reminder.part);
    if (reminder.wakeAt === undefined) next.reminded = pending.id;
    else wakeAt = Math.min(wakeAt ?? Infinity, reminder.wakeAt);
  }

  if (terminal && told.done !== phase) {
    parts.push(...endingParts(session, options.defaults));
    next.done = phase;
  }
  if (progress.merge) mergeProgress(parts, mergeAt, progress.merge);

  const budgeted = withinSessionBudget(parts, optional, told, budgets, (notice): Part => ({ text: notice }));
  Object.assign(next, budgeted.next);
  return { parts: budgeted.parts, next: counted(told, next), wakeAt };
}

/** Progress flushed by a prompt or the result rides in that message when it fits in one. */
function mergeProgress(parts: Part[], at: number, lines: string): void {
  const target = parts[at];
  const merged = target && `${lines}\n${target.text ?? ''}`.trimEnd();
  if (target && merged!.length <= MESSAGE_LIMIT) parts[at] = { ...target, text: merged };
  else parts.splice(at, 0, { text: lines });
}

/** The review: its pages in order, the first with the caption, the last saying which files no page shows. */
function reviewParts(
  session: Session,
  result: NonNullable<Session['status']>['result'] & object,
  pending: Pending,
): Part[] {
  const pages = (result.media ?? []).filter(
    (m) => m.kind === 'diff' && m.request === undefined && isOwnMedia(session, m),
  );
  const pull = session.spec.pullRequest && { number: session.spec.pullRequest.number, stat: result.prStat };
  const caption = text.changesCaption(pending, result.diffStat, pages.length ? result.diffLines : undefined, pull);
  if (!pages.length) return [{ text: caption }];
  const hidden = (result.diffFiles?.total ?? 0) - (result.diffFiles?.shown ?? 0);
  return pages.map((m, i) => ({
    media: m,
    text: [
      i === 0 ? caption : m.caption && showHidden(m.caption),
      i === pages.length - 1 && hidden > 0 ? text.diffMoreFiles(hidden) : '',
    ]
      .filter(Boolean)
      .join('\n'),
  }));
}

/** Bumps the write counter when anything changed, so the new state gets recorded. */
function counted(told: Delivered, next: Delivered): Delivered {
  const changed = JSON.stringify({ ...next, n: 0 }) !== JSON.stringify({ ...told, n: 0 });
  return changed ? { ...next, n: told.n + 1 } : next;
}

function quickReplies(pending: NonNullable<Session['status']>['pending'] & object): QuickReply[] {
  const reply = (label: string, r = label) => ({ label, reply: r });
  switch (pending.kind) {
    // A request not shown whole is allowed once at most, and deny comes first.
    case 'tool':
      return cutChars(pending)
        ? [reply('deny'), reply('allow')]
        : [reply('allow'), reply('allow always'), reply('deny')];
    case 'question': {
      const questions = pending.questions ?? [];
      if (questions.length !== 1) return [reply('reject')];
      return [
        ...questions[0]!.options.map((o, i) => reply(`${i + 1}. ${showHidden(o.label)}`, String(i + 1))),
        reply('reject'),
      ];
    }
    case 'cost':
      return [reply('continue'), reply('stop')];
    case 'egress':
      return [reply('Allow once', 'allow'), reply('Always for repo', 'allow always'), reply('Deny', 'deny')];
    default:
      return [reply('approve'), reply('reject')];
  }
}
