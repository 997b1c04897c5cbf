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

/** One or more messages of at most `limit` characters (counted in UTF-16 units, as Twilio does). */
export function splitMessage(text: string, limit = MESSAGE_LIMIT): string[] {
  if (text.length <= limit) return [text];
  const width = limit - MARKER_ROOM;
  const lines = text.split('\n').flatMap((line) => (line.length > width ? hardWrap(line, width) : [line]));
  const parts: string[] = [];
  let current = '';
  for (const line of lines) {
    const candidate = current ? `${current}\n${line}` : line;
    if (candidate.length > width && current) {
      parts.push(current);
      current = line;
    } else {
      current = candidate;
    }
  }
  if (current) parts.push(current);
  return parts.map((part, i) => `${part}\n(${i + 1}/${parts.length})`);
}
