// make bench: every benchmark (the files below; the rest of bench/ are their parts), one after another, each as its own
// process on a machine no other suite uses (waits up to --wait minutes for it), then one table:
// figure, target, measured, ratio, and the machine's load when each figure was taken.
// --big adds git-history.ts (a generated 1 GiB / 100,000-commit repository: slow to generate the first time).
// Run: make bench [BENCH_ARGS="--wait 30 --only controller --big"]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BESIDE_OTHERS_VARIABLE, inheritedEnv } from './config.ts';
import { machineLoad, waitUntilIdle } from './machine.ts';
import { formatTable, meets, type Row } from './report.ts';

const BENCHMARKS = ['controller.ts', 'first-progress.ts', 'relay.ts', 'egress.ts'];
const BIG_BENCHMARKS = ['git-history.ts'];
const { values: args } = parseArgs({
  options: { wait: { type: 'string', default: '20' }, only: { type: 'string' }, big: { type: 'boolean' } },
});
const benches = [...BENCHMARKS, ...(args.big ? BIG_BENCHMARKS : [])].filter(
  (f) => !args.only || f.startsWith(args.only),
);
const rowsFile = join(mkdtempSync(join(tmpdir(), 'tether-bench-')), 'rows.jsonl');
const readRows = (): Row[] => {
  try {
    return readFileSync(rowsFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Row);
  } catch {
    return [];
  }
};

async function runBench(file: string): Promise<number> {
  // The table is for a quiet machine: the override of a single run never reaches it.
  const env = { ...inheritedEnv(), TETHER_BENCH_ROWS: rowsFile, [BESIDE_OTHERS_VARIABLE]: undefined };
  const child = spawn(process.execPath, [join('bench', file)], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  return new Promise<number>((resolve) => child.once('exit', (c) => resolve(c ?? 1)));
}

const notes: string[] = [];
const rows: Row[] = [];
for (const bench of benches) {
  const name = bench.replace(/\.ts$/, '');
  const free = await waitUntilIdle(Number(args.wait) * 60_000, (others) =>
    console.error(`${name}: waiting for other suites to finish (${others.length}: ${others[0]})`),
  );
  if (!free) {
    notes.push(`${name}: not run, other suites kept the machine busy for ${args.wait} min`);
    continue;
  }
  console.log(`\n=== ${name} (load ${machineLoad()}) ===`);
  const before = readRows().length;
  const code = await runBench(bench);
  const reported = readRows().slice(before);
  rows.push(...reported);
  if (code !== 0)
    notes.push(`${name}: exited with code ${code}${code === 3 ? ' (refused: another suite was running)' : ''}`);
  else if (!reported.length) notes.push(`${name}: reported no figures`);
}

console.log(`\n${formatTable(rows)}`);
for (const note of notes) console.log(`note: ${note}`);
const targeted = rows.filter((r) => r.goal);
console.log(
  `${targeted.filter(meets).length} of ${targeted.length} figures meet their target; load now ${machineLoad()}`,
);
