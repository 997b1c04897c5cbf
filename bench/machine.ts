// What every benchmark states about the machine it ran on, and its refusal to measure while
// another test suite or benchmark competes for the same cores.
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { BESIDE_OTHERS } from './config.ts';

/** The load averages; with the override, how many other suites ran beside the measurement. */
export function machineLoad(): string {
  const load = `${loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ')} on ${cpus().length} cores`;
  const others = BESIDE_OTHERS ? competitors().length : 0;
  return others ? `${load}, beside ${others} other suite processes` : load;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN);
}

const COMPETITORS = [/\bvitest\b/, /\bkube-apiserver\b/];

/** Test runs and control planes on this machine other than this process's own (pid: command). */
export function competitors(): string[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid)
    .flatMap((pid) => {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
        return COMPETITORS.some((c) => c.test(cmd)) ? [`${pid}: ${cmd.slice(0, 100)}`] : [];
      } catch {
        return [];
      }
    });
}

/** Waits (polling) until no other suite runs here, at most maxMs; true when the machine is free. */
export async function waitUntilIdle(maxMs: number, onWait: (others: string[]) => void): Promise<boolean> {
  for (const deadline = Date.now() + maxMs; ; await new Promise((r) => setTimeout(r, 5000))) {
    const others = competitors();
    if (others.length === 0) return true;
    if (Date.now() > deadline) return false;
    onWait(others);
  }
}

/**
 * Exits with a message when a test run or another control plane is already on this machine
 * (unless run alone with the explicit override: then it warns, and each row's load names them).
 */
export function refuseIfBusy(): void {
  const others = competitors();
  if (others.length === 0) return;
  if (BESIDE_OTHERS) {
    process.stderr.write(
      `measuring beside other suites (${others.length}); figures are not comparable with a quiet machine's\n`,
    );
    return;
  }
  process.stderr.write(
    'benchmark refused: other suites are running on this machine, figures would not be comparable:\n' +
      `  ${others.slice(0, 5).join('\n  ')}\n`,
  );
  process.exit(3);
}
