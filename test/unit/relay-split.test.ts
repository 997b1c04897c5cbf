// Splitting outbound text for Twilio's 1,600-character limit.
import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMIT, splitMessage } from '../../relay/outbound/split.ts';

describe('splitMessage', () => {
  it('keeps short text whole', () => {
    expect(splitMessage('hello')).toEqual(['hello']);
    expect(splitMessage('x'.repeat(MESSAGE_LIMIT))).toHaveLength(1);
  });

  it.each([1601, 3200, 10_000, 50_000])('splits %i characters of lines into numbered parts within the limit, losing nothing', (size) => {
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
  });

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
});
