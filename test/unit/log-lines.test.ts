import { describe, expect, it } from 'vitest';
import { formatLine } from '../../local/log-lines.ts';

describe('dev log lines', () => {
  it('renders pino JSON as time, component, level, message and fields', () => {
    const line = JSON.stringify({
      level: 40,
      time: Date.parse('2026-11-22T10:00:01Z'),
      pid: 1,
      hostname: 'h',
      msg: 'watch restarted',
      reason: 'stall',
      n: 2,
    });
    expect(formatLine('relay', line, false)).toBe('10:00:01 relay        WARN  watch restarted reason=stall n=2');
  });

  it.each(['plain text', '{"not":"pino"}', '{broken json', ''])('passes other output through: %j', (line) => {
    expect(formatLine('controller', line, false)).toMatch(
      new RegExp(`^\\d\\d:\\d\\d:\\d\\d controller   ${line.replace(/[{}[\]()*+?.\\^$|]/g, '\\$&')}$`),
    );
  });
});
