// An agent's plan (Markdown, as Claude Code writes it) as a phone reads it: numbered steps,
// WhatsApp emphasis instead of Markdown, no hidden characters. The outbox splits it at line
// boundaries into ≤ 1,600-character messages (outbound/split.ts). Pure.
import { showHidden } from './shown.ts';

const HEADING = /^#{1,6}\s+(.*?)\s*#*$/;
const BULLET = /^([-*+])\s+(.*)$/;
const NUMBERED = /^\d+[.)]\s+/;
const NESTED = /^(\s+)([-*+]|\d+[.)])\s+(.*)$/;

/** Markdown emphasis and links as WhatsApp shows them: **b** → *b*, __i__ → _i_, [t](u) → t (u). */
const inline = (line: string) =>
  line
    .replace(/\*\*(.+?)\*\*/g, '*$1*')
    .replace(/__(.+?)__/g, '_$1_')
    .replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, '$1 ($2)');

/**
 * Top-level bullets become numbered steps (numbering starts again under each heading) unless the
 * plan numbers its own; headings become bold lines; nested items become indented bullets; code
 * blocks are kept as they are; runs of blank lines become one.
 */
export function planForPhone(plan: string): string {
  const lines = showHidden(plan.replace(/\r\n?/g, '\n'))
    .split('\n')
    .map((l) => l.replace(/\s+$/, ''));
  const numbersOwn = lines.some((l) => NUMBERED.test(l));
  const out: string[] = [];
  let step = 0;
  let inCode = false;
  for (const line of lines) {
    if (/^\s*```/.test(line)) inCode = !inCode;
    if (inCode || /^\s*```/.test(line)) {
      out.push(line);
      continue;
    }
    const heading = HEADING.exec(line);
    const bullet = BULLET.exec(line);
    const nested = NESTED.exec(line);
    if (heading) {
      step = 0;
      out.push(`*${heading[1]!.replace(/\*+/g, '')}*`);
    } else if (bullet && !numbersOwn) {
      out.push(`${++step}. ${inline(bullet[2]!)}`);
    } else if (nested) {
      out.push(`${'   '.repeat(Math.min(3, Math.ceil(nested[1]!.length / 2)))}• ${inline(nested[3]!)}`);
    } else if (!/^([-*_]\s*){3,}$/.test(line)) {
      out.push(inline(line));
    }
  }
  return out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
