// How the diff pictures are laid out, and how a diff is cut into pages: at file boundaries where
// possible, inside a file at hunk boundaries, inside a hunk only when one hunk is taller than a page.
// Heights are worked out here from the monospace grid (docs/runner.md explains the numbers); the
// HTML uses the same numbers, so a page is never taller than a phone screen shows at full width.
import type { DiffLine, FileDiff, Hunk } from './diff-parse.ts';

const MONO_ADVANCE = 0.6021;

export const DIFF_LAYOUT = {
  /** CSS px: the width of a phone (390 pt), so one CSS px is shown as one point. */
  width: 390,
  /** Device pixels per CSS px: 780 px wide, under the ~1,600 px WhatsApp scales photos down to. */
  scale: 2,
  /** CSS px: at most twice the width, so a page opened on the phone fills its width, not its height. */
  maxHeight: 780,
  font: 12,
  row: 16,
  numberFont: 9,
  padding: 4,
  titleHeight: 26,
  /** A file header: its rows of name, plus padding and the gap above it. */
  fileExtra: 12,
  hunkHeight: 18,
  noteHeight: 18,
  /** Room kept at the bottom of every page for up to two rows saying what the pages leave out. */
  footerHeight: 36,
  /** A line longer than this is cut, and says how many characters it leaves out. */
  maxLineChars: 400,
  maxNameChars: 300,
} as const;

const L = DIFF_LAYOUT;
const CHAR = L.font * MONO_ADVANCE;

export interface Segment {
  hunk: Hunk;
  from: number;
  to: number;
}

export interface Section {
  file: FileDiff;
  /** The file started on an earlier page. */
  continued: boolean;
  segments: Segment[];
  /** Lines of this file's hunks that no page shows (the pages ran out inside it). */
  linesLeft: number;
}

export interface Page {
  sections: Section[];
  height: number;
  digits: number;
}

export interface Pagination {
  pages: Page[];
  /** Files with nothing on any page. */
  hidden: FileDiff[];
  /** Lines of the unified diff the pages show, plumbing of shown files included. */
  shownRawLines: number;
}

const WIDE = new RegExp(
  '[\\u1100-\\u115F\\u2E80-\\uA4CF\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFE30-\\uFE4F\\uFF00-\\uFF60\\uFFE0-\\uFFE6' +
    '\\u{1F300}-\\u{1FAFF}\\u{20000}-\\u{3FFFD}]',
  'u',
);

/** Columns a text takes in the monospace grid: wide characters take two, a tab goes to the next multiple of 4. */
function columns(text: string): number {
  let cols = 0;
  for (const c of text) cols = c === '\t' ? cols + 4 - (cols % 4) : cols + (WIDE.test(c) ? 2 : 1);
  return cols;
}

/** A line as shown: cut at maxLineChars, with the count of characters left out. */
export function shownText(line: DiffLine): { text: string; cut: string } {
  const chars = [...line.text];
  if (chars.length <= L.maxLineChars) return { text: line.text, cut: '' };
  return {
    text: chars.slice(0, L.maxLineChars).join(''),
    cut: ` … ${(chars.length - L.maxLineChars).toLocaleString('en-US')} more characters`,
  };
}

/** CSS px of one line-number column for numbers of this many digits. */
export const numberWidth = (digits: number) => Math.ceil(digits * L.numberFont * MONO_ADVANCE) + 2 * L.padding;
export const signWidth = Math.ceil(CHAR) + 2;
/** CSS px left for code beside two number columns and the +/− sign. */
export const codeWidth = (digits: number) => L.width - 2 * numberWidth(digits) - signWidth - L.padding;
const codeColumns = (digits: number) => Math.floor(codeWidth(digits) / CHAR);
const nameColumns = Math.floor((L.width - 2 * L.padding) / CHAR);

const rowsOf = (text: string, cols: number) => Math.max(1, Math.ceil(columns(text) / cols));

function lineHeight(line: DiffLine, digits: number): number {
  const { text, cut } = shownText(line);
  return rowsOf(text + cut, codeColumns(digits)) * L.row;
}

/** The header of a file: its name (and old name), then its notes and counts on one row. */
export function headerText(file: FileDiff, continued: boolean): string {
  const name = file.from !== undefined ? `${file.from} → ${file.name}` : file.name;
  const cut = [...name].length > L.maxNameChars ? `${[...name].slice(0, L.maxNameChars).join('')}…` : name;
  return continued ? `${cut} (continued)` : cut;
}

const headerHeight = (file: FileDiff, continued: boolean) =>
  rowsOf(headerText(file, continued), nameColumns) * L.row + L.row + L.fileExtra;

const digitsOf = (file: FileDiff) =>
  Math.max(3, ...file.hunks.flatMap((h) => h.lines.map((l) => String(Math.max(l.old ?? 0, l.new ?? 0)).length)));

const hunkLines = (file: FileDiff) => file.hunks.reduce((n, h) => n + h.lines.length, 0);

/** A builder that fills pages top to bottom and stops at maxPages. */
class Pager {
  readonly pages: Page[] = [];
  private page: Page = { sections: [], height: L.titleHeight, digits: 3 };
  private readonly maxPages: number;

  constructor(maxPages: number) {
    this.maxPages = maxPages;
  }

  /** Room left for content, keeping space for a footer note. */
  room(): number {
    return L.maxHeight - L.footerHeight - this.page.height;
  }

  get empty(): boolean {
    return this.page.sections.length === 0;
  }

  /** Ends the page; false when no page may follow it. */
  turn(): boolean {
    this.pages.push(this.page);
    this.page = { sections: [], height: L.titleHeight, digits: 3 };
    return this.pages.length < this.maxPages;
  }

  add(section: Section, height: number, digits: number): void {
    if (!this.page.sections.includes(section)) this.page.sections.push(section);
    this.page.height += height;
    this.page.digits = Math.max(this.page.digits, digits);
  }

  finish(): Page[] {
    if (!this.empty) this.pages.push(this.page);
    return this.pages;
  }
}

const PAGE_CONTENT = L.maxHeight - L.footerHeight - L.titleHeight;

/** Places one file; false when the pages ran out before its end. */
function placeFile(pager: Pager, file: FileDiff): boolean {
  const digits = digitsOf(file);
  const head = (continued: boolean) => headerHeight(file, continued) + (file.binary && !continued ? L.noteHeight : 0);
  const heights = file.hunks.map((h) => h.lines.map((l) => lineHeight(l, digits)));
  const hunkHeights = heights.map((hs) => hs.reduce((a, b) => a + b, L.hunkHeight));
  const whole = hunkHeights.reduce((a, b) => a + b, head(false));
  const minimum = head(false) + (file.hunks.length ? L.hunkHeight + heights[0]![0]! : 0);
  if (!pager.empty && ((whole > pager.room() && whole <= PAGE_CONTENT) || minimum > pager.room()) && !pager.turn())
    return false;
  let section: Section = { file, continued: false, segments: [], linesLeft: 0 };
  pager.add(section, head(false), digits);
  let shown = 0;
  const cut = () => {
    section.linesLeft = hunkLines(file) - shown;
    return false;
  };
  const newPage = (): boolean => {
    if (!pager.turn()) return false;
    section = { file, continued: true, segments: [], linesLeft: 0 };
    pager.add(section, head(true), digits);
    return true;
  };
  for (const [i, hunk] of file.hunks.entries()) {
    const fitsAPage = hunkHeights[i]! <= PAGE_CONTENT - head(true);
    if (section.segments.length && hunkHeights[i]! > pager.room() && fitsAPage && !newPage()) return cut();
    let from = 0;
    while (from < hunk.lines.length) {
      let height = L.hunkHeight;
      let to = from;
      while (to < hunk.lines.length && height + heights[i]![to]! <= pager.room()) height += heights[i]![to++]!;
      const fresh = pager.room() >= PAGE_CONTENT - head(true);
      if (to === from && !fresh) {
        if (!newPage()) return cut();
        continue;
      }
      if (to === from) height += heights[i]![to++]!;
      section.segments.push({ hunk, from, to });
      pager.add(section, height, digits);
      shown += to - from;
      from = to;
      if (from < hunk.lines.length && !newPage()) return cut();
    }
  }
  return true;
}

/** Cuts a parsed diff into at most maxPages pages. */
export function paginate(files: FileDiff[], maxPages: number): Pagination {
  const pager = new Pager(maxPages);
  for (const file of files) if (!placeFile(pager, file)) break;
  const pages = pager.finish();
  const sections = pages.flatMap((p) => p.sections);
  const shownFiles = new Set(sections.map((s) => s.file));
  const shownRawLines =
    [...shownFiles].reduce((n, f) => n + f.rawLines, 0) - sections.reduce((n, s) => n + s.linesLeft, 0);
  return { pages, hidden: files.filter((f) => !shownFiles.has(f)), shownRawLines };
}
