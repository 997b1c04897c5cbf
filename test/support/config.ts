// The test suites' own settings (the one place under test/ that fault suites and the node tier read variables).
const env = (name: string): string | undefined => process.env[name] || undefined;

/** TETHER_FAULTS_FULL=1: the fault suites run their full counts (100 kills) instead of CI-sized ones. */
const FAULTS_FULL = env('TETHER_FAULTS_FULL') === '1';

/** A fault suite's count: the CI-sized default, or the full one under TETHER_FAULTS_FULL=1. */
export const faultCount = (ci: number, full: number): number => (FAULTS_FULL ? full : ci);

/** TETHER_FAULT_SEED replays a fault suite's random choices. */
export const faultSeed = (): number => Number(env('TETHER_FAULT_SEED') ?? Date.now() % 100_000);

/** TETHER_FAULT_LOG: the log level of the components a fault suite runs as processes (default warn). */
export const FAULT_LOG_LEVEL = env('TETHER_FAULT_LOG') ?? 'warn';

/** Registry and tag `make test-node` builds the images under (IMAGE_REGISTRY=tether.local IMAGE_TAG=dev). */
export const BUILT_IMAGES = {
  registry: env('IMAGE_REGISTRY') ?? 'tether.local',
  tag: env('IMAGE_TAG') ?? 'dev',
} as const;
