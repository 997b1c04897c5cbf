// The texts the runner makes from git's output and the prompt: the review's diff as stored, the commit message.
import type { Requester } from '../../common/session/forge-schema.ts';
import { forgeText } from '../forge/text.ts';

export interface Diff {
  stat: string;
  /** The whole unified diff, redacted. */
  full: string;
  files: number;
  lines: number;
}

/** The diff as status.result.diff holds it: cut at a line end within maxChars, saying how many lines are left out. */
export function cutDiff(full: string, maxChars: number): string {
  if (full.length <= maxChars) return full;
  const kept = full.slice(0, full.lastIndexOf('\n', maxChars - 200) + 1);
  const hidden = full.split('\n').length - kept.split('\n').length;
  return `${kept}… diff cut by Tether: ${hidden} more lines are not shown here (approving publishes all of them) …\n`;
}

/** A person's name as one line of a trailer: hidden characters shown, no line ends or angle brackets. */
export const personName = (name: string) =>
  forgeText(name)
    .replace(/[\s<>]+/g, ' ')
    .trim();

/** The trailer crediting who asked, when the people map gives an email. */
export const coAuthor = (requester?: Requester) =>
  requester?.email ? `Co-authored-by: ${personName(requester.name)} <${requester.email}>\n` : '';

/**
 * "make the navbar sticky" → "make the navbar sticky" (first line, ≤ 64 chars) + the prompt, and a Co-authored-by
 * trailer for the person who asked.
 */
export function commitMessage(prompt: string, session: string, requester?: Requester): string {
  const text = forgeText(prompt.replace(/^script:\s*/, '')).trim();
  const first = (text.split('\n')[0] ?? '').replace(/\s+/g, ' ').trim() || 'changes from Tether';
  const subject = first.length > 64 ? `${first.slice(0, 63)}…` : first;
  const trailer = coAuthor(requester);
  const asked = `Requested from the phone through Tether (session ${session}).`;
  const body = `${subject}\n\n${asked}\n\n${text.slice(0, 2000)}\n`;
  return trailer ? `${body}\n${trailer}` : body;
}
