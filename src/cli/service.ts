/**
 * What the long-running commands (`serve`, `report`) share: their log levels, and their life from a
 * started service to SIGTERM or SIGINT and a clean shutdown.
 */
import type { Logger } from 'pino';
import { EXIT_FAILURE, EXIT_OK } from './errors';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/** A start that failed: logged, one line on stderr, exit status 3. */
export function startFailure(command: string, logger: Logger, error: unknown): number {
  logger.fatal({ err: error }, 'cannot start');
  process.stderr.write(`${command}: ${(error as Error).message}\n`);
  return EXIT_FAILURE;
}

/** Waits for SIGTERM or SIGINT, then shuts the service down. */
export async function runUntilSignal(logger: Logger, running: { shutdown(): Promise<void> }): Promise<number> {
  const signal = await new Promise<NodeJS.Signals>((resolveSignal) => {
    process.once('SIGTERM', () => resolveSignal('SIGTERM'));
    process.once('SIGINT', () => resolveSignal('SIGINT'));
  });
  logger.info({ signal }, 'signal received');
  await running.shutdown();
  return EXIT_OK;
}
