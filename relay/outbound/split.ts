// Fitting text into Twilio's 1,600-character messages: split on line boundaries, number the parts.

export const MESSAGE_LIMIT = 1600;
const MARKER_ROOM = 10; // "\n(99/99)" fits in ten characters

function hardWrap(line: string, width: number): string[] {
  const pieces: string[] = [];
  let rest = line;
  while (rest.length > width) {
    const space = rest.lastIndexOf(' ', width);
    const cut = space > width / 2 ? space : width;
    pieces.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  pieces.push(rest);
  return pieces;
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

/** One or more messages of at most `limit` characters (counted in UTF-16 units, as Twilio does). */
export function splitMessage(text: string, limit = MESSAGE_LIMIT): string[] {
  if (text.length <= limit) return [text];
  const width = limit - MARKER_ROOM;
  const lines = text.split('\n').flatMap((line) => (line.length > width ? hardWrap(line, width) : [line]));
  const parts: string[] = [];
  let current: string[] = [];
  for (const line of lines) {
    if (current.length && [...current, line].join('\n').length > width) {
      const cut = cleanCut(current);
      parts.push(current.slice(0, cut).join('\n'));
      current = current.slice(cut);
      if ([...current, line].join('\n').length > width) {
        parts.push(current.join('\n'));
        current = [];
      }
    }
    current.push(line);
  }
  if (current.length) parts.push(current.join('\n'));
  return parts.map((part, i) => `${part}\n(${i + 1}/${parts.length})`);
}
