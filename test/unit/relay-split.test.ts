// Splitting outbound text for Twilio's 1,600-character limit.
import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMIT, splitMessage } from '../../relay/outbound/split.ts';

describe('splitMessage', () => {
  it('keeps short text whole', () => {
    expect(splitMessage('hello')).toEqual(['hello']);
    expect(splitMessage('x'.repeat(MESSAGE_LIMIT))).toHaveLength(1);
  });

  it.each([1601, 3200, 10_000, 50_000])(
    'splits %i characters of lines into numbered parts within the limit, losing nothing',
    (size) => {
      const lines: string[] = [];
      for (let i = 0; lines.join('\n').length < size; i++) lines.push(`${i}: ${'word '.repeat(i % 40)}`.trim());
      const text = lines.join('\n');
      const parts = splitMessage(text);
      expect(parts.length).toBeGreaterThan(1);
      parts.forEach((p, i) => {
        expect(p.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
        expect(p.endsWith(`\n(${i + 1}/${parts.length})`)).toBe(true);
      });
      expect(parts.map((p) => p.replace(/\n\(\d+\/\d+\)$/, '')).join('\n')).toBe(text);
    },
  );

  it('breaks a single over-long line at spaces, or hard when there are none', () => {
    const words = splitMessage('lorem '.repeat(600).trim());
    words.forEach((p) => expect(p.length).toBeLessThanOrEqual(MESSAGE_LIMIT));
    expect(words.map((p) => p.replace(/\n\(\d+\/\d+\)$/, '')).join(' ')).toBe('lorem '.repeat(600).trim());
    const solid = splitMessage('x'.repeat(5000));
    expect(solid.map((p) => p.replace(/\n\(\d+\/\d+\)$/, '')).join('')).toBe('x'.repeat(5000));
  });

  it('counts emoji as Twilio does (UTF-16 units)', () => {
    splitMessage('🚀'.repeat(1000)).forEach((p) => expect(p.length).toBeLessThanOrEqual(MESSAGE_LIMIT));
  });

  it('never cuts inside an emoji, a flag or a letter with its accent', () => {
    const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    for (const text of [
      `${'a'.repeat(1589)}${'🚀'.repeat(20)}`,
      '🇫🇷'.repeat(900),
      'e\u0301'.repeat(900),
      `${'a'.repeat(1590)}👩‍💻`,
    ]) {
      const parts = splitMessage(text).map((p) => p.replace(/\n\(\d+\/\d+\)$/, ''));
      for (const part of parts) expect(part).not.toMatch(loneSurrogate);
      expect(parts.join('')).toBe(text);
    }
    expect(splitMessage('🇫🇷'.repeat(900))[0]!.replace(/\n\(\d+\/\d+\)$/, '').length % 4).toBe(0);
  });

  it('keeps only the last part within the smaller body of a message with buttons', () => {
    const text = Array.from({ length: 300 }, (_, i) => `line ${i} of the plan`).join('\n');
    const parts = splitMessage(text, MESSAGE_LIMIT, 1024);
    expect(parts.slice(0, -1).some((p) => p.length > 1024)).toBe(true);
    expect(parts.at(-1)!.length).toBeLessThanOrEqual(1024);
    expect(parts.map((p) => p.replace(/\n\(\d+\/\d+\)$/, '')).join('\n')).toBe(text);
    expect(splitMessage('x'.repeat(1500), MESSAGE_LIMIT, 1024)).toHaveLength(2);
  });
});

describe('splitMessage: the first part carries content', () => {
  const strip = (p: string) => p.replace(/\n\(\d+\/\d+\)$/, '');

  it.each([
    [
      'one long paragraph',
      `✅ Done (session a00f).\n${'The agent changed the greeting and explained why. '.repeat(90).trim()}`,
    ],
    ['a paragraph just under a message', `✅ Done (session a00f).\n${'word '.repeat(318).trim()}\nand a second line`],
    [
      'a short lead-in, then a long paragraph',
      `✅ Done (session a00f).\nSummary:\n${'lorem ipsum '.repeat(300).trim()}`,
    ],
  ])('a heading followed by %s does not go alone', (_what, text) => {
    const parts = splitMessage(text);
    expect(parts.length).toBeGreaterThan(1);
    expect(strip(parts[0]!).length).toBeGreaterThan(MESSAGE_LIMIT * 0.75);
    parts.forEach((p) => expect(p.length).toBeLessThanOrEqual(MESSAGE_LIMIT));
    expect(parts.map(strip).join(' ').replace(/\s+/g, ' ')).toBe(text.replace(/\s+/g, ' '));
  });

  it('still cuts at line ends when every part is well filled', () => {
    const text = Array.from({ length: 120 }, (_, i) => `line ${i}: ${'x'.repeat(30)}`).join('\n');
    expect(splitMessage(text).map(strip).join('\n')).toBe(text);
  });
});
