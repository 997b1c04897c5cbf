// One table for every benchmark: each states its figures as rows (figure, target, measured,
// ratio of measured to target where "better" is known) and the machine load while it ran.
// `make bench` (bench/run.ts) gives each benchmark TETHER_BENCH_ROWS, a file to append rows to;
// run alone, a benchmark prints its rows itself.
import { appendFileSync } from 'node:fs';
import { BENCH_ROWS_FILE } from './config.ts';
import { machineLoad } from './machine.ts';

export interface Row {
  /** What was measured, e.g. "controller: writes per admission". */
  figure: string;
  /** The target in words, e.g. "≤ 3". */
  target: string;
  measured: number;
  unit: string;
  /** How measured compares with the target: at most (lower is better) or at least; none for a figure alone. */
  goal: { atMost: number } | { atLeast: number } | null;
  /** The 1-minute load average on this machine when the figure was taken. */
  load?: string;
}

/** measured / target for "at most" goals, target / measured for "at least": ≤ 1 meets the target. */
export const ratio = (row: Row): number =>
  !row.goal
    ? NaN
    : 'atMost' in row.goal
      ? row.measured / row.goal.atMost
      : row.goal.atLeast / Math.max(row.measured, Number.EPSILON);

/** Whether a figure with a target meets it (a figure without one never counts either way). */
export const meets = (row: Row): boolean => ratio(row) <= 1;

export function atMost(figure: string, measured: number, target: number, unit = ''): Row {
  return {
    figure,
    target: `≤ ${target}${unit ? ` ${unit}` : ''}`,
    measured,
    unit,
    goal: { atMost: target },
    load: machineLoad(),
  };
}

export function atLeast(figure: string, measured: number, target: number, unit = ''): Row {
  return {
    figure,
    target: `≥ ${target}${unit ? ` ${unit}` : ''}`,
    measured,
    unit,
    goal: { atLeast: target },
    load: machineLoad(),
  };
}

/** A figure the issue asks for without a target: shown, never counted as met or missed. */
export function measuredOnly(figure: string, measured: number, unit = ''): Row {
  return { figure, target: '—', measured, unit, goal: null, load: machineLoad() };
}

const shown = (n: number) => (Number.isInteger(n) ? String(n) : n >= 100 ? n.toFixed(0) : n.toFixed(2));

export function formatTable(rows: Row[]): string {
  const cells = rows.map((r) => [
    r.figure,
    r.target,
    `${shown(r.measured)}${r.unit ? ` ${r.unit}` : ''}`,
    !r.goal ? '—' : ratio(r) >= 1000 ? '≫ 1 ✗' : `${ratio(r).toFixed(2)}${meets(r) ? '' : ' ✗'}`,
    r.load ?? '',
  ]);
  const header = ['figure', 'target', 'measured', 'ratio', 'load (1/5/15 min)'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) =>
    c
      .map((x, i) => x.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/** Hands the rows to `make bench`, or prints them when the benchmark runs alone. */
export function report(rows: Row[], file = BENCH_ROWS_FILE): void {
  if (file) appendFileSync(file, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
  else console.log(`\n${formatTable(rows)}`);
}
