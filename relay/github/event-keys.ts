// What the webhook (events.ts) and the poll (poll.ts) must agree on, so that the same thing seen
// both ways is one event: its key in `record.seen`, which check conclusions count, and the excerpt.
import { showHidden } from '../../common/hidden-text.ts';

/** The identity of each event: the same whichever way GitHub told it. */
export const eventKeys = {
  checkRun: (id: number, headSha: string) => `check_run:${id}:${headSha}`,
  checksPassed: (headSha: string) => `checks_passed:${headSha}`,
  review: (id: number) => `review:${id}`,
  merged: (number: number) => `pull:${number}:merged`,
  closed: (number: number) => `pull:${number}:closed`,
  headMoved: (headSha: string) => `head:${headSha}`,
};

/** Conclusions that make a checksFailed notice. */
export const FAILED_CONCLUSIONS: ReadonlySet<string> = new Set([
  'failure',
  'timed_out',
  'cancelled',
  'action_required',
]);

/** Conclusions that let a pull request merge (`github.merge: whenGreen`) and make checks "passed". */
export const GREEN_CONCLUSIONS: ReadonlySet<string> = new Set(['success', 'neutral', 'skipped']);

const EXCERPT_LINES = 6;
const EXCERPT_CHARS = 500;

/** The first lines of a check run's output (summary, then text): what the phone is shown of a failure. */
export function checkExcerpt(output: { title?: string | null; summary?: string | null; text?: string | null } = {}) {
  const text = [output.summary, output.text].filter((part): part is string => !!part?.trim()).join('\n');
  const lines = showHidden(text.replace(/\r\n?/g, '\n'))
    .split('\n')
    .map((line) => line.trimEnd())
    .filter(Boolean)
    .slice(0, EXCERPT_LINES)
    .join('\n');
  return cut(lines || oneLine(output.title ?? '', EXCERPT_CHARS), EXCERPT_CHARS);
}

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Text from GitHub (a name, a review's body) as one line the phone can show, hidden characters shown. */
export const oneLine = (text: string, max: number) => cut(showHidden(text.replace(/\s+/g, ' ')).trim(), max);
