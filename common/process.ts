// What every component's main.ts does around its body: stop with exit code 2 on a bad configuration,
// and stop the component on SIGTERM or SIGINT.
import type { Logger } from './log.ts';

/**
 * Runs a configuration loader; an error it recognises (default: any) prints one line naming the
 * variable and exits 2, anything else is a bug and propagates.
 */
export function configOrExit<T>(
  component: string,
  load: () => T,
  isConfigError: (error: unknown) => boolean = () => true,
): T {
  try {
    return load();
  } catch (error) {
    if (!isConfigError(error)) throw error;
    process.stderr.write(
      `tether-${component}: configuration error: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return process.exit(2);
  }
}

/**
 * On the first SIGTERM or SIGINT: log, run stop(), exit with the code it returns (0 by default).
 * A failing stop or a missed deadline exits 1; further signals while stopping are ignored.
 */
export function exitOnSignal(
  logger: Logger,
  message: string,
  stop: (signal: string) => Promise<number | void>,
  deadlineMs?: number,
): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, message);
    if (deadlineMs !== undefined) {
      setTimeout(() => {
        logger.error({ deadlineMs }, 'shutdown deadline passed; exiting');
        process.exit(1);
      }, deadlineMs).unref();
    }
    stop(signal).then(
      (code) => process.exit(code ?? 0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
