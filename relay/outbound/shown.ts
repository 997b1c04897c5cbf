// Text that came from the agent (plans, questions, option labels, tool input, progress, results),
// made safe to show on the phone: characters that hide or reorder text are shown as code points,
// and runs of them collapse so they cannot multiply the message count. Pure.

/** Hidden: controls (but newline and tab), format characters (bidi, zero-width), line/paragraph separators. */
const HIDDEN_RUN = /(?:(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}])+/gu;
/** A run of different hidden characters longer than this is summarised rather than listed. */
const LISTED_GROUPS = 3;

const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** "<U+200B>", "<U+200B ×4000>", or for a long mix "<9 hidden: U+200B U+200C U+202E …>". */
function showRun(run: string): string {
  const chars = [...run];
  const groups: Array<{ char: string; count: number }> = [];
  for (const char of chars) {
    const last = groups.at(-1);
    if (last?.char === char) last.count++;
    else groups.push({ char, count: 1 });
  }
  if (groups.length <= LISTED_GROUPS) return groups.map((g) => `<${codePoint(g.char)}${g.count > 1 ? ` ×${g.count}` : ''}>`).join('');
  const distinct = [...new Set(chars)];
  return `<${chars.length} hidden: ${distinct.slice(0, LISTED_GROUPS).map(codePoint).join(' ')}${distinct.length > LISTED_GROUPS ? ' …' : ''}>`;
}

/** The one escaping of agent text for the phone: hidden characters shown as code points, runs collapsed. */
export const showHidden = (text: string) => text.replace(HIDDEN_RUN, showRun);

/** The first `max` UTF-16 units of `text` without splitting a surrogate pair, and how many were left out. */
export function cutShown(text: string, max: number): { text: string; cut: number } {
  if (text.length <= max) return { text, cut: 0 };
  const end = /[\uD800-\uDBFF]/.test(text[max - 1] ?? '') ? max - 1 : max;
  return { text: text.slice(0, end), cut: text.length - end };
}
