// Progress from agent events, de-duplication, and the bounded line reader for agent output.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { onLines } from '../../runner-image/agents/lines.ts';
import { Deduper, milestone, progressLines } from '../../runner-image/progress.ts';

describe('progress', () => {
  it('takes ::progress:: lines from agent text', () => {
    expect(
      progressLines({
        type: 'text',
        text: 'thinking\n::progress:: Reading Navbar.tsx\n  ::progress::   Running tests  \n::progress::',
      }),
    ).toEqual(['Reading Navbar.tsx', 'Running tests']);
    expect(progressLines({ type: 'text', text: 'I will print ::progress:: later' })).toEqual([]);
  });

  it('derives milestones from tool use', () => {
    expect(milestone('Edit', { file_path: '/workspace/repo/src/theme.ts' })).toBe('Editing theme.ts');
    expect(milestone('Write', { file_path: '/workspace/home/.claude/plans/add-a-toggle.md' })).toBe('Writing the plan');
    expect(milestone('Write', { file_path: '/workspace/repo/docs/plans/roadmap.md' })).toBe('Editing roadmap.md');
    expect(milestone('Read', { file_path: '/workspace/repo/src/Navbar.tsx' })).toBe('Reading Navbar.tsx');
    expect(milestone('Bash', { command: 'npm   test' })).toBe('Running npm test');
    expect(milestone('Bash', { command: 'ls -la' })).toBeUndefined();
    expect(milestone('Edit', 'garbage')).toBeUndefined();
    expect(milestone('Unknown', {})).toBeUndefined();
  });

  it('drops repeats within the recent window', () => {
    const d = new Deduper(2);
    expect(['a', 'a', 'b', 'A', 'c', 'a', ''].map((t) => d.accept(t))).toEqual([
      true,
      false,
      true,
      false,
      true,
      true,
      false,
    ]);
  });
});

describe('agent output lines', () => {
  const collect = async (chunks: (string | Buffer)[], max?: number) => {
    const lines: string[] = [];
    await onLines(
      Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))),
      (l) => lines.push(l),
      max,
    );
    return lines;
  };

  it('splits across chunks, keeps a last unterminated line, strips CR', async () => {
    expect(await collect(['ab', 'c\r\nde', 'f\ng'])).toEqual(['abc', 'def', 'g']);
  });

  it('cuts huge lines without buffering them whole', async () => {
    const lines = await collect(['x'.repeat(50), 'y'.repeat(50), 'z\nok\n'], 40);
    expect(lines).toEqual(['x'.repeat(40), 'ok']);
  });

  it('survives invalid UTF-8 and split multi-byte characters', async () => {
    const euro = Buffer.from('€\n');
    expect(await collect([Buffer.from([0xff, 0xfe, 0x0a]), euro.subarray(0, 1), euro.subarray(1)])).toEqual([
      '\ufffd\ufffd',
      '€',
    ]);
  });
});
