// How often a run may speak: progress at growing intervals within a per-run budget, and a cap on
// everything one Session sends. Pure; every deadline comes from timestamps in the delivered state.
import type { ProgressItem } from '../../common/session/schema.ts';
import type { Delivered } from '../delivered-state.ts';
import { text } from '../text.ts';
import { BUDGET_DEFAULTS } from '../defaults.ts';

export interface OutboundBudgets {
  /** the gap after a run's first progress message; each later gap doubles, up to progressMaxGapMs */
  progressBatchMs: number;
  progressMaxGapMs: number;
  /** progress messages one run sends; after that only *status* shows the detail */
  progressMessages: number;
  /** messages one Session sends in all; past it, only prompts and the result get through */
  sessionMessages: number;
}

/** What a caller sets: the first gap, and any budget it does not leave to the defaults. */
export type BudgetOptions = Pick<OutboundBudgets, 'progressBatchMs'> &
  Partial<Omit<OutboundBudgets, 'progressBatchMs'>>;

/** The budgets a caller set, the defaults for the rest. */
export const budgetsOf = (o: BudgetOptions): OutboundBudgets => ({
  progressBatchMs: o.progressBatchMs,
  progressMaxGapMs: o.progressMaxGapMs ?? BUDGET_DEFAULTS.progressMaxGapMs,
  progressMessages: o.progressMessages ?? BUDGET_DEFAULTS.progressMessages,
  sessionMessages: o.sessionMessages ?? BUDGET_DEFAULTS.sessionMessages,
});

/** Progress lines one message shows: the newest; the rest are counted. */
export const PROGRESS_LINES_SHOWN = 6;

/** When the next progress message may go: at once for the first, then after a doubling gap. */
export function progressDueAt(told: Delivered, budgets: OutboundBudgets): number {
  const sent = told.progressSent ?? 0;
  if (sent === 0 || told.progressAt === undefined) return 0;
  const gap = Math.min(budgets.progressMaxGapMs, budgets.progressBatchMs * 2 ** Math.min(sent - 1, 30));
  return told.progressAt + gap;
}

export interface ProgressStep {
  /** a message of its own */
  message?: string;
  /** lines to put in front of the prompt or result going out now (no message of their own) */
  merge?: string;
  wakeAt?: number;
  next: Pick<Delivered, 'seq' | 'progressSent' | 'progressAt'>;
}

/**
 * What to do with progress the phone has not seen. With a prompt or the result going out
 * (`flush`), it rides along in that message; otherwise it waits for its turn in the cadence;
 * past the run's budget it is only marked seen (*status* shows the latest).
 */
export function progressStep(
  fresh: ProgressItem[],
  told: Delivered,
  flush: boolean,
  now: number,
  budgets: OutboundBudgets,
): ProgressStep {
  const seen = { seq: told.seq, progressSent: told.progressSent, progressAt: told.progressAt };
  if (!fresh.length) return { next: seen };
  const seq = Math.max(...fresh.map((p) => p.seq));
  const sent = told.progressSent ?? 0;
  const lines = progressText(fresh);
  if (sent >= budgets.progressMessages) return { next: { ...seen, seq } };
  if (flush) return { merge: lines, next: { ...seen, seq } };
  const dueAt = progressDueAt(told, budgets);
  if (now < dueAt) return { wakeAt: dueAt, next: seen };
  const last = sent + 1 === budgets.progressMessages;
  return {
    message: last ? `${lines}\n${text.progressOnStatus()}` : lines,
    next: { seq, progressSent: sent + 1, progressAt: now },
  };
}

/** The newest lines, one message's worth whatever the runner reported. */
function progressText(fresh: ProgressItem[]): string {
  const shown = fresh.slice(-PROGRESS_LINES_SHOWN).map((p) => p.text);
  return text.progress(shown, fresh.length - shown.length);
}

/**
 * The Session-wide cap. `optional` parts (progress, reminders, `diff <file>` pages) are dropped
 * once the Session has sent its budget, and the user is told so once; the rest always go.
 */
export function withinSessionBudget<P>(
  parts: P[],
  optional: Set<P>,
  told: Delivered,
  budgets: OutboundBudgets,
  notice: (text: string) => P,
): { parts: P[]; next: Pick<Delivered, 'messages' | 'capped'> } {
  if (!parts.length) return { parts, next: { messages: told.messages, capped: told.capped } };
  let messages = told.messages ?? 0;
  let capped = told.capped;
  const kept: P[] = [];
  for (const part of parts) {
    if (optional.has(part) && messages >= budgets.sessionMessages) {
      if (!capped) {
        kept.push(notice(text.sessionCapped(budgets.sessionMessages)));
        capped = true;
        messages++;
      }
      continue;
    }
    kept.push(part);
    messages++;
  }
  return { parts: kept, next: { messages, ...(capped ? { capped } : {}) } };
}
