// The texts the runner makes from git's output and the prompt: the review's diff as stored, the commit message.
import { forgeText } from '../forge/text.ts';

/** The diff as status.result.diff holds it: cut at a line end within maxChars, saying how many lines are left out. */
export function cutDiff(full: string, maxChars: number): string {
  if (full.length <= maxChars) return full;
  const kept = full.slice(0, full.lastIndexOf('\n', maxChars - 200) + 1);
  const hidden = full.split('\n').length - kept.split('\n').length;
  return `${kept}… diff cut by Tether: ${hidden} more lines are not shown here (approving publishes all of them) …\n`;
}

/** "make the navbar sticky" → "Tether: make the navbar sticky" (first line, ≤ 72 chars) + the prompt. */
export function commitMessage(prompt: string, session: string): string {
  const text = forgeText(prompt.replace(/^script:\s*/, '')).trim();
  const first = (text.split('\n')[0] ?? '').replace(/\s+/g, ' ').trim() || 'changes from Tether';
  const subject = first.length > 64 ? `${first.slice(0, 63)}…` : first;
  return `${subject}\n\nRequested from the phone through Tether (session ${session}).\n\n${text.slice(0, 2000)}\n`;
}
