// A phone's model spend per day: the sum of status.result.costUsd of its Sessions that ended (or,
// still running, started) on the budget day — a calendar day in the install's time zone. The relay
// refuses a new command over it, the controller a waiting one when its turn comes. Pure.
import type { Session } from './schema.ts';

export interface CostBudget {
  /** US dollars per phone per budget day; 0: no limit */
  dailyUsd: number;
  /** IANA zone whose midnight starts a new budget day */
  timeZone: string;
  /** a run pauses to ask "continue?" at each multiple of this spend (spec.costPauseUsd); 0: never */
  runPauseUsd: number;
}

export const COST_DEFAULTS: CostBudget = { dailyUsd: 10, timeZone: 'UTC', runPauseUsd: 2 };

/** One formatter per zone: making one costs more than a reconcile pass's other work. */
const dayFormats = new Map<string, Intl.DateTimeFormat>();

/** The calendar day of `at` in `timeZone`, as YYYY-MM-DD. */
export function budgetDay(at: number, timeZone: string): string {
  let format = dayFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    dayFormats.set(timeZone, format);
  }
  return format.format(at);
}

/** When a Session's spend counts: the day it ended, else the day it started (or arrived). */
function spendTime(session: Session): number {
  const s = session.status;
  const at = s?.completionTime ?? s?.startTime ?? session.metadata.creationTimestamp;
  return at ? new Date(at).getTime() : Number.NaN;
}

/** A cost the runner reported, or 0 for anything that is not a finite, non-negative number. */
const reported = (session: Session) => {
  const usd = session.status?.result?.costUsd;
  return typeof usd === 'number' && Number.isFinite(usd) && usd > 0 ? usd : 0;
};

/** What the phone's Sessions spent on the budget day that contains `now`. */
export function spentToday(sessions: Session[], now: number, timeZone: string): number {
  const today = budgetDay(now, timeZone);
  let total = 0;
  for (const session of sessions) {
    const cost = reported(session);
    if (cost === 0) continue;
    const at = spendTime(session);
    if (Number.isFinite(at) && budgetDay(at, timeZone) === today) total += cost;
  }
  return total;
}

/** Whether a new command may start: spend so far is below the day's budget (0: no budget). */
export const withinDailyBudget = (spent: number, budget: Pick<CostBudget, 'dailyUsd'>) =>
  budget.dailyUsd <= 0 || spent < budget.dailyUsd;

export const usd = (amount: number) => `$${amount.toFixed(2)}`;
