// Fitting text into Twilio's 1,600-character messages: split on line boundaries, number the parts.

export const MESSAGE_LIMIT = 1600;
const MARKER_ROOM = 10; // "\n(99/99)" fits in ten characters

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Where to cut `text` at or before `index` without tearing a character (an emoji, a letter and its accents). */
function safeCut(text: string, index: number): number {
  let boundary = 0;
  for (const { index: at } of graphemes.segment(text)) {
    if (at > index) break;
    boundary = at;
  }
  if (boundary > 0) return boundary;
  // One "character" longer than a message (a letter with thousands of accents): cut between code points.
  return /[\uDC00-\uDFFF]/.test(text[index] ?? '') ? index - 1 : index;
}

/** `line` cut to at most `width` characters: at its last space past the middle, else at a character boundary. */
function wrapAt(line: string, width: number): [string, string] {
  const space = line.lastIndexOf(' ', width);
  const cut = space > width / 2 ? space : safeCut(line, width);
  return [line.slice(0, cut).trimEnd(), line.slice(cut).trimStart()];
}

/** A line that starts a step or a section (a numbered item, a *bold* heading): a clean place to begin a message. */
const STARTS_STEP = /^(\d+[.)] |\*[^*\n]+\*$)/;

/**
 * Where to end a full part: before its last step start in the second half (so a step is not torn
 * across messages), else after its last line.
 */
function cleanCut(lines: string[]): number {
  const total = lines.join('\n').length;
  let before = 0;
  let cut = lines.length;
  for (const [i, line] of lines.entries()) {
    if (i > 0 && before >= total / 2 && STARTS_STEP.test(line)) cut = i;
    before += line.length + 1;
  }
  return cut;
}

/**
 * A part holding less than this share of a message takes the start of a long next line rather than
 * going nearly empty (a heading alone).
 */
const FILL_SHARE = 0.25;

/** Unnumbered parts of at most `width` characters, cut at line ends where it can. */
function pieces(text: string, width: number): string[] {
  const parts: string[] = [];
  let current: string[] = [];
  const size = () => current.join('\n').length;
  for (let line of text.split('\n')) {
    for (;;) {
      const used = current.length ? size() + 1 : 0;
      if (used + line.length <= width) break;
      if (used >= width * FILL_SHARE) {
        const cut = cleanCut(current);
        parts.push(current.slice(0, cut).join('\n'));
        current = current.slice(cut);
        continue;
      }
      const [head, tail] = wrapAt(line, width - used);
      parts.push([...current, head].join('\n'));
      current = [];
      line = tail;
    }
    current.push(line);
  }
  if (current.length) parts.push(current.join('\n'));
  return parts;
}

/** Unnumbered parts filled to `width`, cut at the last line end or space in the part's last fifth, else anywhere. */
function densePieces(text: string, width: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > width) {
    const gap = Math.max(rest.lastIndexOf('\n', width), rest.lastIndexOf(' ', width));
    const cut = gap >= width * 0.8 ? gap : safeCut(rest, width);
    parts.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).replace(/^[ \n]/, '');
  }
  parts.push(rest);
  return parts;
}

/** `pieces`, the last of them within `lastWidth`. */
function withLast(
  split: (text: string, width: number) => string[],
  text: string,
  width: number,
  lastWidth: number,
): string[] {
  const parts = split(text, width);
  if (parts.at(-1)!.length > lastWidth) parts.push(...split(parts.pop()!, lastWidth));
  return parts;
}

const numbered = (parts: string[]) => parts.map((part, i) => `${part}\n(${i + 1}/${parts.length})`);

/**
 * One or more messages of at most `limit` characters (counted in UTF-16 units, as Twilio does);
 * the last at most `lastLimit` (a message carrying buttons has a smaller body).
 */
export function splitMessage(text: string, limit = MESSAGE_LIMIT, lastLimit = limit): string[] {
  if (text.length <= Math.min(limit, lastLimit)) return [text];
  return numbered(withLast(pieces, text, limit - MARKER_ROOM, lastLimit - MARKER_ROOM));
}

/** Messages a request for the user's decision takes when its text allows (text.ts keeps the agent's part within it). */
export const REQUEST_MESSAGES = 3;

/**
 * A request for a decision: split like any message, but packed densely (lines run on across
 * messages) when the clean split would take more than REQUEST_MESSAGES and the dense one fewer.
 */
export function splitRequest(text: string, lastLimit: number): string[] {
  const clean = splitMessage(text, MESSAGE_LIMIT, lastLimit);
  if (clean.length <= REQUEST_MESSAGES) return clean;
  const dense = withLast(densePieces, text, MESSAGE_LIMIT - MARKER_ROOM, lastLimit - MARKER_ROOM);
  return dense.length < clean.length ? numbered(dense) : clean;
}
