// A plan as the phone reads it: numbered steps, WhatsApp emphasis, nothing hidden, split cleanly.
import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMIT, splitMessage, splitRequest } from '../../relay/outbound/split.ts';
import { planForPhone } from '../../relay/chat/agent-plan.ts';
import { text } from '../../relay/text.ts';
import { showHidden } from '../../relay/chat/shown.ts';
import { BUTTON_BODY_CHARS } from '../../relay/chat/buttons.ts';

const createdAt = '2026-11-22T08:00:00Z';

describe('planForPhone', () => {
  it('numbers top-level bullets under each heading, bolds headings, indents nested items, keeps code', () => {
    const plan = [
      '# Plan: dark mode',
      '',
      '## Steps',
      '- Add a **toggle** to `Header.tsx`',
      '  - read the [docs](https://example.com/x)',
      '- Store the choice',
      '',
      '',
      '',
      '## Files',
      '* src/theme.ts',
      '---',
      '```ts',
      '- not a bullet',
      '```',
    ].join('\n');
    expect(planForPhone(plan)).toBe(
      [
        '*Plan: dark mode*',
        '',
        '*Steps*',
        '1. Add a *toggle* to `Header.tsx`',
        '   • read the docs (https://example.com/x)',
        '2. Store the choice',
        '',
        '*Files*',
        '1. src/theme.ts',
        '```ts',
        '- not a bullet',
        '```',
      ].join('\n'),
    );
  });

  it('keeps a plan that numbers its own steps, and shows hidden characters', () => {
    expect(planForPhone('1. one\n- aside\n2. two\u202e\u0007\r\n3. three')).toBe(
      '1. one\n- aside\n2. two<U+202E><U+0007>\n3. three',
    );
  });

  it('a long plan reaches the phone in ≤ 1,600-character messages, each starting at a step', () => {
    const steps = Array.from(
      { length: 40 },
      (_, i) => `- Step ${i + 1}: ${'change the thing carefully '.repeat(3)}\n  - detail of step ${i + 1}`,
    );
    const message = text.pending({ id: 'p', kind: 'plan', summary: `## Steps\n${steps.join('\n')}`, createdAt }, '30m');
    const parts = splitMessage(message);
    expect(parts.length).toBeGreaterThan(2);
    for (const [i, part] of parts.entries()) {
      expect(part.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
      if (i > 0 && i < parts.length - 1) expect(part).toMatch(/^\d+\. Step \d+/);
    }
    expect(parts[0]).toMatch(/^📝 The agent's plan:\n\*Steps\*\n1\. Step 1:/);
    expect(parts.at(-1)).toMatch(
      new RegExp(
        /Reply \*approve\* to run it, \*reject\* to drop it, /.source +
          /or write what to change\. \(expires in 30 min\)\n\(\d+\/\d+\)$/.source,
      ),
    );
  });

  it.each([
    ['4,000 zero-width spaces', '\u200b'.repeat(4000)],
    ['hidden characters between letters', 'a\u200b'.repeat(2000)],
    ['a mix of bidi and zero-width characters', '\u202e\u200b\u200c\u2066'.repeat(1000)],
  ])('a plan of %s takes at most three messages and says what was left out', (_label, summary) => {
    const message = text.pending({ id: 'p', kind: 'plan', summary, createdAt }, '30m');
    const parts = splitRequest(message, BUTTON_BODY_CHARS);
    expect(parts.length).toBeLessThanOrEqual(3);
    expect(message).not.toMatch(/[\u200b\u202e\u200c\u2066]/);
    expect(parts.at(-1)).toMatch(/write what to change/);
  });

  it('a question, its options and descriptions are escaped and cut like a plan', () => {
    const options = Array.from({ length: 8 }, (_, i) => ({
      label: `opt\u202e${i}`,
      description: 'd\u2028'.repeat(500),
    }));
    const message = text.pending(
      { id: 'q', kind: 'question', createdAt, questions: [{ question: 'Which\u2029one?', options }] },
      '30m',
    );
    expect(message).toMatch(/^❓ Which<U\+2029>one\?\n1\. opt<U\+202E>0 — d<U\+2028>d/);
    expect(message).not.toMatch(/[\u2028\u2029\u202e]/);
    expect(message).toMatch(
      /more characters of the questions not shown — answer in your own words, or \*reject\*\.\nReply with a number/,
    );
    expect(splitRequest(message, BUTTON_BODY_CHARS).length).toBeLessThanOrEqual(3);
  });
});

describe('showHidden', () => {
  it('shows each hidden character, a run of one as a count, a long mix as a summary; keeps newlines and tabs', () => {
    expect(showHidden('a\u202eb')).toBe('a<U+202E>b');
    expect(showHidden('\u200b'.repeat(4000))).toBe('<U+200B ×4000>');
    expect(showHidden('x\u2028y\u2029z')).toBe('x<U+2028>y<U+2029>z');
    expect(showHidden('\u202e\u200b\u200b\u2066')).toBe('<U+202E><U+200B ×2><U+2066>');
    expect(showHidden('\u202e\u200b\u200c\u2066\u202e')).toBe('<5 hidden: U+202E U+200B U+200C …>');
    expect(showHidden('line\n\tindented')).toBe('line\n\tindented');
  });

  it('reaches echoes, progress and the result', () => {
    expect(text.echoChose(1, 'Post\u202egres')).toBe('You chose 1 (Post<U+202E>gres).');
    expect(text.progress(['step\u2028two'])).toBe('⏳ step<U+2028>two');
  });
});
