// The diff pictures without a browser: parsing git's output, cutting it into pages, and the HTML
// (escaped, highlighted by highlight.js, no plumbing).
import { beforeAll, describe, expect, it } from 'vitest';
import { matchDiffFile } from '../../common/session/diff-files.ts';
import { DIFF_LAYOUT, paginate } from '../../runner-image/pictures/diff-layout.ts';
import {
  languageOf,
  loadHighlighter,
  pageHtml,
  splitHighlighted,
  type Highlighter,
} from '../../runner-image/pictures/diff-html.ts';
import { parseDiff, unquotePath } from '../../runner-image/pictures/diff-parse.ts';
import { bigFile, manyFiles, SAMPLE_DIFF, HOSTILE_NAMES_DIFF } from '../support/diffs.ts';

let hl: Highlighter;
beforeAll(async () => {
  hl = await loadHighlighter();
});

/** Every tag name in the page's body. */
const tagsIn = (html: string) =>
  new Set(
    html
      .split('<body>')
      .slice(1)
      .flatMap((body) =>
        [...body.split('</body>')[0]!.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9-]*)/g)].map((m) => m[1]!.toLowerCase()),
      ),
  );
const ALLOWED_TAGS = ['body', 'header', 'span', 'h2', 'div', 'i', 'b', 'code', 'em', 'footer', 'html'];
const htmlOf = (diff: string) =>
  paginate(parseDiff(diff), 3)
    .pages.map((p) => pageHtml(p, { title: 't', counter: '' }, hl))
    .join('');

describe('parsing git diff output', () => {
  it('keeps files, counts and numbered lines, and drops the plumbing', () => {
    const [config, readme, image, script] = parseDiff(SAMPLE_DIFF);
    expect(config).toMatchObject({ name: 'src/config.ts', added: 2, deleted: 1, binary: false, notes: [] });
    expect(config!.hunks[0]!.section).toBe('export function load()');
    expect(config!.hunks[0]!.lines.slice(0, 3)).toEqual([
      { kind: 'ctx', old: 1, new: 1, text: 'export const a = 1;' },
      { kind: 'del', old: 2, text: "export const token = 'abc';" },
      { kind: 'add', new: 2, text: 'export const token = process.env.TOKEN;' },
    ]);
    expect(readme).toMatchObject({ name: 'README.md', notes: ['new file'], added: 2 });
    expect(readme!.hunks[0]!.lines.at(-1)).toEqual({ kind: 'note', text: 'No newline at end of file' });
    expect(image).toMatchObject({ name: 'img.png', binary: true, hunks: [] });
    expect(script).toMatchObject({ name: 'run.sh', notes: ['mode 100644', '→ 100755'] });
    const html = htmlOf(SAMPLE_DIFF);
    for (const plumbing of ['diff --git', 'index 1111111', '--- a/', '+++ b/', 'new file mode', 'old mode', '@@ -1'])
      expect(html).not.toContain(plumbing);
  });

  it('reads renames, deletions and quoted names (newlines, octal UTF-8) and shows hidden characters', () => {
    const files = parseDiff(HOSTILE_NAMES_DIFF);
    expect(files.map((f) => f.name)).toEqual([
      '<script>alert(1)</script>.html',
      'new<U+000A>line.txt',
      'café/日本.md',
      'gone.txt',
      'new/name.ts',
      'crlf.txt',
      'bidi.ts',
    ]);
    expect(files[3]!.notes).toEqual(['deleted']);
    expect(files[4]).toMatchObject({ from: 'old/name.ts', notes: ['similarity 90%'] });
    expect(files[5]!.notes).toEqual(['CRLF']);
    expect(files[5]!.hunks[0]!.lines.map((l) => l.text)).toEqual(['one', 'two']);
    expect(files[6]!.hunks[0]!.lines[1]!.text).toBe('const ok = true; /*<U+202E> } if (admin) { <U+2066>*/');
    expect(unquotePath('"a\\\\b\\"c\\t"')).toBe('a\\b"c\t');
  });
});

describe('the page HTML', () => {
  it('escapes everything: names, code, highlight.js output; only layout tags and highlight spans remain', () => {
    const html = htmlOf(HOSTILE_NAMES_DIFF);
    expect([...tagsIn(html)].filter((t) => !ALLOWED_TAGS.includes(t))).toEqual([]);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;.html');
    expect(html).not.toMatch(/<script|<img|onerror=/i);
    expect(html).toContain('Content-Security-Policy');
    for (const span of html.matchAll(/<span[^>]*>/g)) expect(span[0]).toMatch(/^<span class="[\w -]+">$/);
  });

  it('highlights by extension, plain when unknown', () => {
    expect(languageOf(hl.hljs, 'src/a.ts')).toBe('ts');
    expect(languageOf(hl.hljs, 'deploy/Dockerfile')).toBe('dockerfile');
    expect(languageOf(hl.hljs, 'notes.unknownext')).toBeUndefined();
    expect(languageOf(hl.hljs, 'LICENSE')).toBeUndefined();
    expect(htmlOf(SAMPLE_DIFF)).toContain('<span class="hljs-keyword">export</span>');
  });

  it('closes and reopens highlight spans at line ends', () => {
    expect(splitHighlighted('<span class="a">x\ny<span class="b">z</span>\nw</span>')).toEqual([
      '<span class="a">x</span>',
      '<span class="a">y<span class="b">z</span></span>',
      '<span class="a">w</span>',
    ]);
  });
});

describe('pages', () => {
  it('a long diff becomes 3 pages cut at file boundaries, with the rest counted', () => {
    const files = parseDiff(manyFiles(40, 12));
    const { pages, hidden } = paginate(files, 3);
    expect(pages).toHaveLength(3);
    for (const page of pages) {
      expect(page.height).toBeLessThanOrEqual(DIFF_LAYOUT.maxHeight);
      expect(page.sections.every((s) => !s.continued && s.linesLeft === 0)).toBe(true);
    }
    const shown = pages.flatMap((p) => p.sections.map((s) => s.file.name));
    expect(new Set(shown).size).toBe(shown.length);
    expect(hidden.map((f) => f.name)).toEqual(files.slice(shown.length).map((f) => f.name));
    expect(hidden.length).toBeGreaterThan(0);
  });

  it('a file taller than a page is cut at hunk boundaries', () => {
    const files = parseDiff(bigFile(12, 15));
    const { pages } = paginate(files, 3);
    expect(pages.length).toBeGreaterThan(1);
    const segments = pages.flatMap((p) => p.sections.flatMap((s) => s.segments));
    expect(segments.every((s) => s.from === 0 && s.to === s.hunk.lines.length)).toBe(true);
    expect(pages.slice(1).every((p) => p.sections[0]!.continued)).toBe(true);
  });

  it('a 10,000-line file: 3 pages, and the lines left out are counted', () => {
    const files = parseDiff(bigFile(1, 10_000));
    const { pages } = paginate(files, 3);
    expect(pages).toHaveLength(3);
    const shown = pages.flatMap((p) => p.sections.flatMap((s) => s.segments)).reduce((n, s) => n + s.to - s.from, 0);
    expect(pages[2]!.sections.at(-1)!.linesLeft).toBe(10_001 - shown);
    for (const page of pages) expect(page.height).toBeLessThanOrEqual(DIFF_LAYOUT.maxHeight);
  });
});

describe('diff <file>', () => {
  const names = ['src/app.ts', 'src/lib/app.ts', 'README.md', 'docs/guide.md'];
  it('matches the exact path, then ignoring case, then the one path ending with it', () => {
    expect(matchDiffFile(names, 'src/app.ts')).toBe('src/app.ts');
    expect(matchDiffFile(names, 'readme.MD')).toBe('README.md');
    expect(matchDiffFile(names, 'guide.md')).toBe('docs/guide.md');
    expect(matchDiffFile(names, 'app.ts')).toBeUndefined();
    expect(matchDiffFile(names, 'nope.ts')).toBeUndefined();
    expect(matchDiffFile(names, '')).toBeUndefined();
  });
});
