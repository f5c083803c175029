import { UsageError } from '../drain-contract';
/**
 * The two kinds of failure the CLI reports without a stack trace. Anything else reaching `main` is a
 * drainguard bug and is reported as one.
 */

/**
 * Exit statuses, one scheme for every command, on the model of diff(1) and `kubectl diff`: 1 reports a
 * finding and is not an error, anything above 1 is one, so a script can test `status > 1`.
 */
export const EXIT_OK = 0;
/** A finding, not an error: `inject --diff` found differences, `check` found a check that does not hold. */
export const EXIT_FINDINGS = 1;
/** Wrong flags or arguments. */
export const EXIT_USAGE = 2;
/** The command could not do its work: bad input (a file, YAML, an annotation, a config) or, for `serve`, it cannot start. */
export const EXIT_FAILURE = 3;
/** A drainguard bug. */
export const EXIT_BUG = 4;

/**
 * What each exit status means for one command. `--help` prints these rows and the docs' "Exit codes"
 * tables must say the same (test/e2e/cli/exit-codes.test.ts reads all three against the real process).
 */
export type ExitCodeTable = readonly (readonly [code: number, meaning: string])[];

export const EXIT_BUG_MEANING = 'a drainguard bug (reported with a stack trace)';

/** The `Exit status:` section of a usage text. */
export function formatExitCodes(table: ExitCodeTable): string {
  return `Exit status (above 1 is an error, as with diff and kubectl diff):\n${table.map(([code, meaning]) => `  ${code}  ${meaning}`).join('\n')}\n`;
}

/**
 * Wrong flags or arguments: exit 2, with a pointer to `--help`. The drain contract's error, so that a
 * refusal of its parser and one of a command's own checks are the same kind of failure.
 */
export { UsageError };

/** Bad input the user can fix (unreadable file, invalid YAML, a denied override): exit 3. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}

/**
 * A failure that is drainguard's fault, not the user's (e.g. a PatchVerificationError from the core):
 * reported as a bug, with the location being processed and the original error as `cause`.
 */
export class DrainguardBugError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DrainguardBugError';
  }
}

/**
 * Writes the message for an error that ended a subcommand and returns the exit code. User errors get a
 * message and no stack trace; anything else is a drainguard bug and says so, with the stack a report needs.
 */
export function reportError(error: unknown, writeStderr: (text: string) => void): number {
  if (error instanceof UsageError) {
    writeStderr(`${error.message}\n`);
    return EXIT_USAGE;
  }
  if (error instanceof InputError) {
    writeStderr(`error: ${error.message.replaceAll('\n', '\nerror: ')}\n`);
    return EXIT_FAILURE;
  }
  const cause = error instanceof DrainguardBugError ? error.cause : error;
  const where = error instanceof DrainguardBugError ? `${error.message}\n` : '';
  writeStderr(
    'drainguard: internal error. This is a bug in drainguard, not in your input; please report it with the input.\n' +
      `${where}${cause instanceof Error ? (cause.stack ?? cause.message) : String(cause)}\n`,
  );
  return EXIT_BUG;
}
