// A plan as the phone reads it: numbered steps, WhatsApp emphasis, nothing hidden, split cleanly.
import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMIT, splitMessage } from '../../relay/outbound/split.ts';
import { planForPhone } from '../../relay/outbound/plan-text.ts';
import { text } from '../../relay/text.ts';

const createdAt = '2026-11-22T08:00:00Z';

describe('planForPhone', () => {
  it('numbers top-level bullets under each heading, bolds headings, indents nested items, keeps code', () => {
    const plan = [
      '# Plan: dark mode', '', '## Steps', '- Add a **toggle** to `Header.tsx`', '  - read the [docs](https://example.com/x)', '- Store the choice',
      '', '', '', '## Files', '* src/theme.ts', '---', '```ts', '- not a bullet', '```',
    ].join('\n');
    expect(planForPhone(plan)).toBe([
      '*Plan: dark mode*', '', '*Steps*', '1. Add a *toggle* to `Header.tsx`', '   • read the docs (https://example.com/x)', '2. Store the choice',
      '', '*Files*', '1. src/theme.ts', '```ts', '- not a bullet', '```',
    ].join('\n'));
  });

  it('keeps a plan that numbers its own steps, and shows hidden characters', () => {
    expect(planForPhone('1. one\n- aside\n2. two\u202e\u0007\r\n3. three')).toBe('1. one\n- aside\n2. two<U+202E><U+0007>\n3. three');
  });

  it('a long plan reaches the phone in ≤ 1,600-character messages, each starting at a step', () => {
    const steps = Array.from({ length: 40 }, (_, i) => `- Step ${i + 1}: ${'change the thing carefully '.repeat(3)}\n  - detail of step ${i + 1}`);
    const message = text.pending({ id: 'p', kind: 'plan', summary: `## Steps\n${steps.join('\n')}`, createdAt }, '30m');
    const parts = splitMessage(message);
    expect(parts.length).toBeGreaterThan(2);
    for (const [i, part] of parts.entries()) {
      expect(part.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
      if (i > 0 && i < parts.length - 1) expect(part).toMatch(/^\d+\. Step \d+/);
    }
    expect(parts[0]).toMatch(/^📝 The agent's plan:\n\*Steps\*\n1\. Step 1:/);
    expect(parts.at(-1)).toMatch(/Reply \*approve\* to run it, \*reject\* to drop it, or write what to change\. \(expires in 30 min\)\n\(\d+\/\d+\)$/);
  });
});
