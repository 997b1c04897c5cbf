// Prometheus' own checks for the tests: client_golang's promlint on exposition text, and Prometheus'
// PromQL parser on expressions, through test/support/promlint (built once by scripts/ensure-promlint.sh).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The first call may build the helper (minutes on a fresh, loaded machine); give beforeAll this much. */
export const PROMLINT_SETUP_TIMEOUT = 600_000;

let binPath: string | undefined;
export function promlintBin(): string {
  binPath ??= execFileSync('scripts/ensure-promlint.sh', {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  return binPath;
}

/** Runs the helper on files holding `contents`; exit 0 or 1 (problems) is an answer, anything else throws. */
function runOn(mode: 'metrics' | 'exprs', contents: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'promlint-'));
  try {
    for (const [name, text] of Object.entries(contents)) writeFileSync(join(dir, name), text);
    const run = spawnSync(promlintBin(), [mode, ...Object.keys(contents)], { cwd: dir, encoding: 'utf8' });
    if (run.status !== 0 && run.status !== 1) throw new Error(`promlint ${mode} exited ${run.status}: ${run.stderr}`);
    return run.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** promlint's problems with each exposition text, as "name: metric: problem" lines; none when clean. */
export function lintMetrics(outputs: Record<string, string>): string[] {
  return runOn('metrics', outputs).split('\n').filter(Boolean);
}

export interface Selector {
  name: string;
  matchers: { label: string; op: string; value: string }[];
}

/** The vector selectors of each expression, by Prometheus' parser; throws naming any that does not parse. */
export function selectorsOf(exprs: string[]): Selector[][] {
  if (exprs.some((e) => e.includes('\n'))) throw new Error('one-line expressions only');
  const lines = runOn('exprs', { 'exprs.txt': exprs.join('\n') + '\n' })
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { line: number; error?: string; selectors: Selector[] });
  const errors = lines.filter((l) => l.error).map((l) => `${exprs[l.line - 1]}: ${l.error}`);
  if (errors.length > 0) throw new Error(`PromQL that does not parse:\n${errors.join('\n')}`);
  return lines.map((l) => l.selectors);
}

/** Metric families of an exposition text, by name, with their TYPE. */
export function familiesOf(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** The family a series name belongs to: itself, or the histogram or summary whose _bucket/_sum/_count it is. */
export function familyOf(series: string, families: Map<string, string>): string | undefined {
  if (families.has(series)) return series;
  const base = series.replace(/_(bucket|sum|count)$/, '');
  return base !== series && ['histogram', 'summary'].includes(families.get(base) ?? '') ? base : undefined;
}
