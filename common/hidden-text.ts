// Characters that hide or reorder text (bidi overrides, zero-width and other invisible characters,
// controls: the "Trojan Source" problem), shown as code points wherever Tether shows or publishes
// text it did not write: the agent's words on the phone, the prompt and the agent's summary on the
// forge. Runs collapse, so they cannot multiply a message's length. Pure.

/**
 * Hidden: controls (but newline and tab), format characters (bidi, zero-width), line and paragraph
 * separators, and what else Unicode draws as nothing (fillers, variation selectors), but the
 * emoji/text presentation selectors (U+FE0E, U+FE0F), which only choose how the emoji before them looks.
 */
const HIDDEN_RUN = /(?:(?![\n\t]|\uFE0E|\uFE0F)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}])+/gu;
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
  if (groups.length <= LISTED_GROUPS)
    return groups.map((g) => `<${codePoint(g.char)}${g.count > 1 ? ` ×${g.count}` : ''}>`).join('');
  const distinct = [...new Set(chars)];
  const listed = distinct.slice(0, LISTED_GROUPS).map(codePoint).join(' ');
  return `<${chars.length} hidden: ${listed}${distinct.length > LISTED_GROUPS ? ' …' : ''}>`;
}

/** The one escaping of text Tether did not write: hidden characters shown as code points, runs collapsed. */
export const showHidden = (text: string) => text.replace(HIDDEN_RUN, showRun);
