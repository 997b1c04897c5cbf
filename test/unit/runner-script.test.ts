// The scripted agent's grammar (README "Scripted agent"): every step, escapes, malformed lines.
import { describe, expect, it } from 'vitest';
import { describeScenario, parseScenario, parseStep } from '../../runner-image/agents/script-scenario.ts';

describe('script agent grammar', () => {
  it('parses every step kind', () => {
    const steps = parseScenario([
      'script: progress: Reading the code',
      'write: src/a.ts = export const a = 1;\\nexport const b = 2;',
      'tool: Bash {"command":"npm test"}',
      'ask: Which database? | Redis | In-memory',
      'sleep: 250',
      'fail: tests failed',
      'say: All done\\tthanks',
    ].join('\n'));
    expect(steps).toEqual([
      { kind: 'progress', text: 'Reading the code' },
      { kind: 'write', path: 'src/a.ts', content: 'export const a = 1;\nexport const b = 2;' },
      { kind: 'tool', tool: 'Bash', input: { command: 'npm test' } },
      { kind: 'ask', question: 'Which database?', options: ['Redis', 'In-memory'] },
      { kind: 'sleep', ms: 250 },
      { kind: 'fail', message: 'tests failed' },
      { kind: 'say', text: 'All done\tthanks' },
    ]);
  });

  it('keeps malformed lines as raw output instead of failing', () => {
    expect(parseStep('tool: Bash {broken')).toEqual({ kind: 'tool', tool: 'Bash', input: { raw: '{broken' } });
    expect(parseStep('tool: Read [1,2]')).toEqual({ kind: 'tool', tool: 'Read', input: { value: [1, 2] } });
    expect(parseStep('tool: Glob')).toEqual({ kind: 'tool', tool: 'Glob', input: {} });
    expect(parseStep('sleep: soon')).toEqual({ kind: 'raw', text: 'sleep: soon' });
    expect(parseStep('write: no equals sign')).toEqual({ kind: 'raw', text: 'write: no equals sign' });
    expect(parseStep('hello world')).toEqual({ kind: 'raw', text: 'hello world' });
    expect(parseStep('   ')).toBeUndefined();
    expect(parseStep('fail:')).toEqual({ kind: 'fail', message: 'scripted failure' });
    expect(parseStep('sleep: 99999999')).toEqual({ kind: 'sleep', ms: 600_000 });
  });

  it('runs the built-in demo for any other prompt', () => {
    const steps = parseScenario('make the navbar sticky');
    expect(steps.map((s) => s.kind)).toEqual(['progress', 'sleep', 'write', 'say']);
    expect(steps[2]).toMatchObject({ kind: 'write', path: 'TETHER_DEMO.md' });
    expect((steps[2] as { content: string }).content).toContain('make the navbar sticky');
  });

  it('describes a scenario as a numbered plan', () => {
    expect(describeScenario(parseScenario('script:\nwrite: a.txt = x\ntool: Bash {}\nask: Go? | yes\nsay: ok'))).toBe('1. write a.txt\n2. use Bash\n3. ask "Go?"\n4. ok');
  });
});
