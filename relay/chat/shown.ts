// Text that came from the agent (plans, questions, option labels, tool input, progress, results),
// made safe to show on the phone: characters that hide or reorder text are shown as code points
// (common/hidden-text.ts, the same escaping as what Tether writes to the forge). Pure.
export { showHidden } from '../../common/hidden-text.ts';

/** The first `max` UTF-16 units of `text` without splitting a surrogate pair, and how many were left out. */
export function cutShown(text: string, max: number): { text: string; cut: number } {
  if (text.length <= max) return { text, cut: 0 };
  const end = /[\uD800-\uDBFF]/.test(text[max - 1] ?? '') ? max - 1 : max;
  return { text: text.slice(0, end), cut: text.length - end };
}
