// The phone's words about its pull requests: what GitHub told (checks, reviews, merged, closed) and
// the answers to *fix*, *ignore*, *details*, *merge*. Text from GitHub (check names and output,
// review bodies, logins) is hostile: fromGitHub() cuts it, drops secrets and hidden characters,
// takes away WhatsApp's formatting marks and makes its links inert before it reaches a message.
import type { Redactor } from '../common/log.ts';
import { showHidden, cutShown } from './chat/shown.ts';

/** How much of GitHub's text the notice shows (more on *details*). */
export const NOTICE_EXCERPT = { lines: 4, chars: 300 };
export const DETAILS_EXCERPT = { lines: 12, chars: 1200 };
const NAME_CHARS = 60;

/** *bold*, ~strike~, `code`, and _italic_ where an underscore is not inside a word (snake_case stays). */
const FORMATTING = /[*~`]|(?<![\p{L}\p{N}])_|_(?![\p{L}\p{N}])/gu;

/** Cut to `max` characters with an ellipsis. */
function cut(text: string, max: number): string {
  const { text: shown, cut: left } = cutShown(text, max);
  return left ? `${shown.trimEnd()}…` : shown;
}

/** Secrets redacted, hidden characters shown, formatting marks dropped, `scheme://` made inert. */
function neutral(text: string, redact: Redactor): string {
  return showHidden(redact(text)).replace(FORMATTING, '').replace(/:\/\//g, '[:]//');
}

/** One line of GitHub's text (a check's name, a login), at most `max` characters. */
export const lineFromGitHub = (text: string, redact: Redactor, max = NAME_CHARS) =>
  cut(neutral(text, redact).replace(/\s+/g, ' ').trim(), max);

/** Lines of GitHub's text, each marked as quoted ("│ "), so none reads as Tether's own words. */
export function fromGitHub(text: string, redact: Redactor, limits: { lines: number; chars: number }): string {
  const lines = cut(neutral(text, redact), limits.chars)
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
  const shown = lines.slice(0, limits.lines);
  return [...shown, ...(lines.length > shown.length ? ['…'] : [])].map((l) => `│ ${l}`).join('\n');
}

const where = (number: number, repoName: string) => `pull request #${number} (${repoName})`;
const by = (login: string) => (login ? ` by ${login}` : '');
const onCode = (comments: number) =>
  comments > 0 ? ` (${comments} comment${comments === 1 ? '' : 's'} on the code)` : '';
const ANSWER = 'Reply *fix* to have the agent {do}, *details* for more, or *ignore*.';
const answer = (todo: string) => ANSWER.replace('{do}', todo);
const withQuote = (head: string, quote: string, tail: string) => [head, quote, tail].filter(Boolean).join('\n');

export const pullText = {
  checksFailed: (number: number, repoName: string, check: string, excerpt: string) =>
    withQuote(`❌ Check *${check}* failed on ${where(number, repoName)}.`, excerpt, answer('fix it')),
  changesRequested: (number: number, repoName: string, reviewer: string, gist: string, comments: number) =>
    withQuote(
      `✋ ${reviewer || 'A reviewer'} asked for changes on ${where(number, repoName)}${onCode(comments)}.`,
      gist,
      answer('address the review'),
    ),
  reviewComments: (number: number, repoName: string, reviewer: string, gist: string, comments: number) =>
    withQuote(
      `💬 ${reviewer || 'A reviewer'} commented on ${where(number, repoName)}${onCode(comments)}.`,
      gist,
      answer('address it'),
    ),
  checksPassed: (number: number, repoName: string) =>
    `✅ Checks pass on ${where(number, repoName)} after the fix. Reply *merge* to merge it, if this install allows it.`,
  merged: (number: number, repoName: string, login: string) =>
    `🎉 Pull request #${number} (${repoName}) was merged${by(login)}. ` +
    'Your next command there starts from the base branch.',
  closed: (number: number, repoName: string, login: string) =>
    `Pull request #${number} (${repoName}) was closed without merging${by(login)}. ` +
    'Your next command there starts from the base branch.',
  checkDetails: (number: number, url: string, check: string, headSha: string, excerpt: string) =>
    withQuote(
      `Check *${check}* on commit ${headSha.slice(0, 7)} of pull request #${number} (${url}):`,
      excerpt || '│ (no output)',
      '',
    ),
  reviewDetails: (number: number, url: string, reviewer: string, headSha: string, gist: string) =>
    withQuote(
      `Review${by(reviewer)} of commit ${headSha.slice(0, 7)} on pull request #${number} (${url}):`,
      gist || '│ (no text; its line comments are on GitHub)',
      '',
    ),

  fixPrompt: (number: number, kind: 'checks' | 'review') =>
    kind === 'checks'
      ? `Fix the failing checks on pull request #${number}`
      : `Address the review on pull request #${number}`,
  ignored: (number: number) => `OK, nothing is done about that notice on pull request #${number}.`,
  alreadyAnswered: (number: number, answered: string) =>
    `That notice on pull request #${number} was already answered (*${answered}*).`,
  noNotice: () => 'No pull request notice is waiting for an answer. Reply *prs* to list your pull requests.',
  noticeGone: () => 'That notice is no longer open. Reply *prs* to list your pull requests.',
  nothingToFix: (number: number) =>
    `There is nothing to fix on that notice of pull request #${number}. Send a command to change it.`,
  noDetails: (number: number) => `There is nothing more to that notice on pull request #${number}.`,
  notOpen: (number: number, state: string) => `Pull request #${number} is ${state}: nothing more is done on it.`,
  noPull: () => 'You have no open pull request. Reply *prs* to list yours.',
  mergeOff: () => 'Merging from the phone is not enabled on this install.',
};
