// A unified diff (git diff output) as files, hunks and numbered lines, without git's plumbing
// (`diff --git`, `index`, `---`/`+++`, mode and rename lines): what the diff pictures show.

export type LineKind = 'add' | 'del' | 'ctx' | 'note';

export interface DiffLine {
  kind: LineKind;
  /** Line number in the old file (deleted and context lines). */
  old?: number;
  /** Line number in the new file (added and context lines). */
  new?: number;
  text: string;
}

export interface Hunk {
  /** What follows the second `@@`: the enclosing function or section, when git found one. */
  section: string;
  lines: DiffLine[];
}

export interface FileDiff {
  /** The path as shown: the new path, the old one for a deletion; hidden characters made visible. */
  name: string;
  /** A rename's or copy's old path. */
  from?: string;
  /** What git said about the file besides its lines: new file, deleted, renamed, mode changed. */
  notes: string[];
  binary: boolean;
  added: number;
  deleted: number;
  hunks: Hunk[];
  /** Lines of the unified diff this file took, plumbing included. */
  rawLines: number;
}

/** Control and format characters (bidi overrides, zero-width, NUL, a lone CR) shown as code points. */
export const visible = (text: string) =>
  text.replace(/(?!\t)[\p{Cc}\p{Cf}]/gu, (c) => `<U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}>`);

/** git's C-style quoted path ("a/\303\251\n.txt") as text; unquoted paths pass through. */
export function unquotePath(path: string): string {
  if (!path.startsWith('"') || !path.endsWith('"') || path.length < 2) return path;
  const bytes: number[] = [];
  const simple: Record<string, string> = {
    n: '\n',
    t: '\t',
    r: '\r',
    '"': '"',
    '\\': '\\',
    a: '\x07',
    b: '\b',
    f: '\f',
    v: '\v',
  };
  const body = path.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const octal = /^[0-7]{3}/.exec(body.slice(i + 1));
    if (octal) {
      bytes.push(parseInt(octal[0], 8));
      i += 3;
    } else {
      bytes.push(...Buffer.from(simple[body[i + 1] ?? ''] ?? body[i + 1] ?? '', 'utf8'));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

const stripSide = (path: string) => unquotePath(path).replace(/^[ab]\//, '');

/** The path from `diff --git a/X b/X` when both sides are the same (renames name theirs elsewhere). */
function pathFromHeader(rest: string): string {
  const quoted = /^("(?:[^"\\]|\\.)*") ("(?:[^"\\]|\\.)*"|\S.*)$/.exec(rest);
  if (quoted) return stripSide(quoted[2]!);
  const half = (rest.length - 1) / 2;
  if (Number.isInteger(half) && rest[half] === ' ') return stripSide(rest.slice(half + 1));
  return stripSide(rest.split(' ').at(-1) ?? rest);
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@ ?(.*)$/;
const NOTE_LINES: Array<[RegExp, (m: RegExpExecArray) => string]> = [
  [/^new file mode (\d+)/, () => 'new file'],
  [/^deleted file mode (\d+)/, () => 'deleted'],
  [/^old mode (\d+)/, (m) => `mode ${m[1]}`],
  [/^new mode (\d+)/, (m) => `→ ${m[1]}`],
  [/^similarity index (\d+%)/, (m) => `similarity ${m[1]}`],
];

function startFile(header: string): FileDiff {
  return {
    name: pathFromHeader(header.slice('diff --git '.length)),
    notes: [],
    binary: false,
    added: 0,
    deleted: 0,
    hunks: [],
    rawLines: 1,
  };
}

/** A line of the file header (between `diff --git` and the first hunk). */
function headerLine(file: FileDiff, line: string): void {
  if (/^(---|\+\+\+) /.test(line)) {
    if (!line.endsWith(' /dev/null')) file.name = stripSide(line.slice(4).replace(/\t$/, ''));
  } else if (line.startsWith('rename from ') || line.startsWith('copy from '))
    file.from = unquotePath(line.replace(/^(rename|copy) from /, ''));
  else if (line.startsWith('rename to ') || line.startsWith('copy to '))
    file.name = unquotePath(line.replace(/^(rename|copy) to /, ''));
  else if (line.startsWith('Binary files ') || line === 'GIT binary patch') file.binary = true;
  else {
    for (const [pattern, note] of NOTE_LINES) {
      const m = pattern.exec(line);
      if (m) file.notes.push(note(m));
    }
  }
}

/** Parses `git diff` output; CRLF line ends are dropped, other hidden characters made visible. */
export function parseDiff(diff: string): FileDiff[] {
  const files: FileDiff[] = [];
  let file: FileDiff | undefined;
  let hunk: Hunk | undefined;
  let old = 0;
  let now = 0;
  const lines = diff.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const raw of lines) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line !== raw && hunk && file && !file.notes.includes('CRLF')) file.notes.push('CRLF');
    if (line.startsWith('diff --git ')) {
      file = startFile(line);
      files.push(file);
      hunk = undefined;
      continue;
    }
    if (!file) continue;
    file.rawLines++;
    const start = HUNK.exec(line);
    if (start) {
      [old, now] = [Number(start[1]), Number(start[2])];
      hunk = { section: visible(start[3]!), lines: [] };
      file.hunks.push(hunk);
    } else if (!hunk) headerLine(file, line);
    else if (line.startsWith('+')) {
      hunk.lines.push({ kind: 'add', new: now++, text: visible(line.slice(1)) });
      file.added++;
    } else if (line.startsWith('-')) {
      hunk.lines.push({ kind: 'del', old: old++, text: visible(line.slice(1)) });
      file.deleted++;
    } else if (line.startsWith('\\')) hunk.lines.push({ kind: 'note', text: visible(line.slice(2)) });
    else hunk.lines.push({ kind: 'ctx', old: old++, new: now++, text: visible(line.slice(1)) });
  }
  for (const f of files) {
    f.name = visible(f.name);
    if (f.from !== undefined) f.from = visible(f.from);
  }
  return files;
}
