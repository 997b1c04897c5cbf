// One diff page as HTML: a title, then per file a header with its +/− counts and its hunks as rows
// of old number, new number, sign and code, highlighted by highlight.js from the file's extension.
// Everything from the diff is escaped: highlight.js escapes what it returns, the rest goes through
// escapeHtml; the page also forbids scripts and loads (CSP), and is rendered with JavaScript off.
import type { HLJSApi } from 'highlight.js';
import { packageFile } from '../image-files.ts';
import {
  codeWidth,
  DIFF_LAYOUT as L,
  headerText,
  numberWidth,
  shownText,
  signWidth,
  type Page,
  type Section,
  type Segment,
} from './diff-layout.ts';
import type { DiffLine, FileDiff } from './diff-parse.ts';

export interface Highlighter {
  hljs: HLJSApi;
  css: string;
}

/** Loaded on first use: most runs draw no diff, and start-up time matters. */
export async function loadHighlighter(): Promise<Highlighter> {
  const hljs = (await import('highlight.js')).default;
  const css = await packageFile('highlight.js/styles/github-dark.min.css');
  return { hljs, css };
}

const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

const BY_NAME: Record<string, string> = {
  dockerfile: 'dockerfile',
  makefile: 'makefile',
  gnumakefile: 'makefile',
  cmakelists: 'cmake',
};

/** highlight.js's language for a path (by extension, or a few well-known names); undefined: plain text. */
export function languageOf(hljs: HLJSApi, path: string): string | undefined {
  const base = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
  const byName = BY_NAME[base.replace(/\.txt$/, '')];
  if (byName) return byName;
  const dot = base.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const ext = base.slice(dot + 1);
  return /^[a-z0-9+_-]{1,12}$/.test(ext) && hljs.getLanguage(ext) ? ext : undefined;
}

/** highlight.js output cut into lines, each closing the spans it opened and reopening the ones it inherits. */
export function splitHighlighted(html: string): string[] {
  const open: string[] = [];
  return html.split('\n').map((line) => {
    const prefix = open.join('');
    for (const tag of line.match(/<span[^>]*>|<\/span>/g) ?? []) {
      if (tag === '</span>') open.pop();
      else open.push(tag);
    }
    return prefix + line + '</span>'.repeat(open.length);
  });
}

/**
 * The rows' code as HTML: each side of a segment (old: context and deleted lines, new: context and
 * added lines) is highlighted as one text, so strings and comments over several lines keep their colour.
 */
function segmentCode(segment: Segment, language: string | undefined, hljs: HLJSApi): Map<DiffLine, string> {
  const lines = segment.hunk.lines.slice(segment.from, segment.to);
  const code = new Map<DiffLine, string>();
  for (const side of [['ctx', 'add'], ['del']]) {
    const chosen = lines.filter((l) => side.includes(l.kind));
    const texts = chosen.map((l) => shownText(l).text);
    const html = language
      ? splitHighlighted(hljs.highlight(texts.join('\n'), { language, ignoreIllegals: true }).value)
      : texts.map(escapeHtml);
    chosen.forEach((l, i) => code.set(l, html[i] ?? ''));
  }
  return code;
}

const SIGN: Record<DiffLine['kind'], string> = { add: '+', del: '−', ctx: '', note: '' };

function row(line: DiffLine, code: string | undefined): string {
  const cut = shownText(line).cut;
  const text = line.kind === 'note' ? `<em>${escapeHtml(line.text)}</em>` : (code ?? '');
  return (
    `<div class="r ${line.kind}"><i>${line.old ?? ''}</i><i>${line.new ?? ''}</i><b>${SIGN[line.kind]}</b>` +
    `<code>${text}${cut ? `<em>${escapeHtml(cut)}</em>` : ''}</code></div>`
  );
}

function counts(file: FileDiff): string {
  const notes = file.notes.map(escapeHtml).join(' · ');
  const delta = `<span class="plus">+${file.added}</span> <span class="minus">−${file.deleted}</span>`;
  return `<div class="meta">${notes ? `${notes} · ` : ''}${file.binary ? 'binary' : delta}</div>`;
}

function section(s: Section, hl: Highlighter): string {
  const language = languageOf(hl.hljs, s.file.name);
  const parts = [`<h2><div class="name">${escapeHtml(headerText(s.file, s.continued))}</div>${counts(s.file)}</h2>`];
  if (s.file.binary && !s.continued) parts.push('<div class="note">Binary file: its content is not shown.</div>');
  for (const segment of s.segments) {
    const first = segment.hunk.lines[segment.from];
    const at = first?.new ?? first?.old;
    const label =
      segment.from > 0
        ? '⋯ (continued)'
        : `⋯ ${at !== undefined ? `line ${at}` : ''}${segment.hunk.section ? ` · ${segment.hunk.section}` : ''}`;
    parts.push(`<div class="h">${escapeHtml(label)}</div>`);
    const code = segmentCode(segment, language, hl.hljs);
    for (const line of segment.hunk.lines.slice(segment.from, segment.to)) parts.push(row(line, code.get(line)));
  }
  return parts.join('');
}

function style(page: Page, css: string): string {
  const n = numberWidth(page.digits);
  return `${css}
*{box-sizing:border-box}html,body{margin:0;background:#0d1117;color:#c9d1d9}
body{width:${L.width}px;font:${L.font}px/${L.row}px 'DejaVu Sans Mono',monospace}
header{height:${L.titleHeight}px;line-height:${L.titleHeight}px;padding:0 ${L.padding}px;
  background:#161b22;color:#f0f6fc;
  font:bold 12px/${L.titleHeight}px 'DejaVu Sans',sans-serif;display:flex;gap:6px}
header .title{flex:1;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
h2{margin:4px 0 0;padding:4px;background:#1f6feb33;font:inherit;color:#f0f6fc}
.name{font-weight:bold;white-space:pre-wrap;word-break:break-all;overflow-wrap:anywhere}
.meta{color:#8b949e;white-space:nowrap;overflow:hidden}.plus{color:#3fb950}.minus{color:#f85149}
.h{height:${L.hunkHeight}px;line-height:${L.hunkHeight}px;padding:0 ${L.padding}px;color:#a5d6ff;background:#388bfd1a;
  font-size:10px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.r{display:grid;grid-template-columns:${n}px ${n}px ${signWidth}px ${codeWidth(page.digits)}px}
.r i{font:${L.numberFont}px/${L.row}px 'DejaVu Sans Mono',monospace;color:#6e7681;
  text-align:right;padding:0 ${L.padding}px;font-style:normal}
.r b{text-align:center;font-weight:normal}
code{font:inherit;white-space:pre-wrap;word-break:break-all;overflow-wrap:anywhere;tab-size:4}
.add{background:#2ea04326}.add b{color:#3fb950}.del{background:#f8514926}.del b{color:#f85149}
em{color:#f0b72f;font-style:normal}.note em{color:#8b949e}
div.note,footer{min-height:${L.noteHeight}px;padding:1px ${L.padding}px;color:#f0b72f;
  font:11px/16px 'DejaVu Sans',sans-serif}
`;
}

export interface PageText {
  title: string;
  /** "2/3" */
  counter: string;
  /** What the pages leave out, on the last page. */
  footer?: string;
}

export function pageHtml(page: Page, text: PageText, hl: Highlighter): string {
  const csp = "default-src 'none'; style-src 'unsafe-inline'";
  return (
    `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${csp}">` +
    `<style>${style(page, hl.css)}</style></head><body>` +
    `<header><span class="title">${escapeHtml(text.title)}</span>${escapeHtml(text.counter)}</header>` +
    page.sections.map((s) => section(s, hl)).join('') +
    (text.footer ? `<footer>${escapeHtml(text.footer)}</footer>` : '') +
    '</body></html>'
  );
}
