import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { atLeast, atMost, formatTable, measuredOnly, meets, ratio, report } from '../../bench/report.ts';

describe('benchmark table', () => {
  it('states each figure against its target: a ratio ≤ 1 meets it, whichever way "better" points', () => {
    const writes = atMost('writes per admission', 3.02, 3);
    const rate = atLeast('admission rate ÷ raw create rate', 0.8, 0.75);
    expect(ratio(writes)).toBeCloseTo(1.0067, 3);
    expect(meets(writes)).toBe(false);
    expect(ratio(rate)).toBeCloseTo(0.9375, 4);
    expect(meets(rate)).toBe(true);
    expect(writes.load).toMatch(/ on \d+ cores$/);
    const table = formatTable([writes, rate]).split('\n');
    expect(table[0]).toMatch(/^figure\s+target\s+measured\s+ratio\s+load/);
    expect(table[2]).toMatch(/^writes per admission\s+≤ 3\s+3\.02\s+1\.01 ✗/);
    expect(table[3]).toMatch(/≥ 0\.75\s+0\.80\s+0\.94\s/);
  });

  it('shows a figure without a target with a dash, neither met nor missed', () => {
    const restart = measuredOnly('lost Pod → going again p50', 2400, 'ms');
    expect(meets(restart)).toBe(false);
    expect(ratio(restart)).toBeNaN();
    const [, , line] = formatTable([restart]).split('\n');
    expect(line).toMatch(/^lost Pod → going again p50\s+—\s+2400 ms\s+—\s+\d/);
  });

  it('shows a missed "at least" of nothing measured without a meaningless ratio', () => {
    const [, , line] = formatTable([atLeast('warm starts', 0, 500)]).split('\n');
    expect(line).toMatch(/^warm starts\s+≥ 500\s+0\s+≫ 1 ✗\s/);
  });

  it('hands rows to make bench through its file, one JSON line each', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bench-rows-')), 'rows.jsonl');
    report([atMost('RSS', 150, 200, 'MiB')], file);
    report([atMost('resync', 4, 5, 's')], file);
    expect(
      readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { figure: string }).figure),
    ).toEqual(['RSS', 'resync']);
  });
});
