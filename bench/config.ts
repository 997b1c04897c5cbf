// The benchmarks' one reader of process.env: where `make bench` collects their table rows.
export const BENCH_ROWS_FILE: string | undefined = process.env.TETHER_BENCH_ROWS || undefined;
/** The environment a benchmark's child process inherits. */
export const inheritedEnv = (): NodeJS.ProcessEnv => ({ ...process.env });
