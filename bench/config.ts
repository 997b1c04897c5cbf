// The benchmarks' one reader of process.env: where `make bench` collects their table rows, and the
// explicit override that lets one benchmark, run alone, measure beside other suites.
export const BENCH_ROWS_FILE: string | undefined = process.env.TETHER_BENCH_ROWS || undefined;
/**
 * TETHER_BENCH_BESIDE_OTHERS=1: measure even while other suites run (each row's load says so); `make bench`
 * never sets it.
 */
export const BESIDE_OTHERS_VARIABLE = 'TETHER_BENCH_BESIDE_OTHERS';
export const BESIDE_OTHERS: boolean = process.env[BESIDE_OTHERS_VARIABLE] === '1';
/** The environment a benchmark's child process inherits; `make bench` (bench/run.ts) passes it without the override. */
export const inheritedEnv = (): NodeJS.ProcessEnv => ({ ...process.env });
