/**
 * Every `drainguard` command with its flags: the one table that dispatch, `help`, "did you mean",
 * the exit-code tables and shell completion all read.
 */
import type { FlagSpecs } from './args';
import { CHECK_EXIT_CODES, CHECK_FLAGS, CHECK_USAGE } from './check';
import { completionScript, SHELLS, type Shell } from './completion';
import { EXIT_BUG, EXIT_BUG_MEANING, EXIT_OK, EXIT_USAGE, formatExitCodes, type ExitCodeTable } from './errors';
import { INJECT_EXIT_CODES, INJECT_FLAGS, INJECT_USAGE } from './inject';
import { REPORT_EXIT_CODES, REPORT_FLAGS, REPORT_USAGE } from './report';
import { SERVE_EXIT_CODES, SERVE_FLAGS, SERVE_USAGE } from './serve';
import { VERSION_EXIT_CODES, VERSION_FLAGS, VERSION_USAGE } from './version-command';

export const PROGRAM = 'drainguard';

export interface CommandSpec {
  name: string;
  summary: string;
  flags: FlagSpecs;
  usage: string;
  exitCodes: ExitCodeTable;
  /** The values of the command's one positional argument, if it takes one. */
  argument?: readonly string[];
}

const HELP_FLAGS = {} satisfies FlagSpecs;
const COMPLETION_FLAGS = { help: { type: 'boolean', short: 'h', description: 'show this help' } } satisfies FlagSpecs;

const COMPLETION_EXIT_CODES: ExitCodeTable = [
  [EXIT_OK, 'the script was printed'],
  [EXIT_USAGE, 'no shell, or one drainguard has no script for'],
  [EXIT_BUG, EXIT_BUG_MEANING],
];

export const COMPLETION_USAGE = `Usage: ${PROGRAM} completion ${SHELLS.join('|')}

Prints a shell completion script for ${PROGRAM}'s commands, flags and flag values:
  bash:  source <(${PROGRAM} completion bash)       (or save it in ~/.local/share/bash-completion/completions/${PROGRAM})
  zsh:   source <(${PROGRAM} completion zsh)        (after compinit; or save it as _${PROGRAM} in a directory of $fpath)
  fish:  ${PROGRAM} completion fish | source        (or save it as ~/.config/fish/completions/${PROGRAM}.fish)

${formatExitCodes(COMPLETION_EXIT_CODES)}`;

const HELP_EXIT_CODES: ExitCodeTable = [
  [EXIT_OK, 'the help was printed'],
  [EXIT_USAGE, 'no such command'],
];

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'inject',
    summary: 'rewrite Envoy pods and workloads in YAML files as the webhook would (offline)',
    flags: INJECT_FLAGS,
    usage: INJECT_USAGE,
    exitCodes: INJECT_EXIT_CODES,
  },
  { name: 'serve', summary: 'run the HTTPS admission webhook', flags: SERVE_FLAGS, usage: SERVE_USAGE, exitCodes: SERVE_EXIT_CODES },
  {
    name: 'check',
    summary: 'check, read-only, the installation and which Envoy pods are protected (--pre: before installing)',
    flags: CHECK_FLAGS,
    usage: CHECK_USAGE,
    exitCodes: CHECK_EXIT_CODES,
  },
  {
    name: 'report',
    summary: 'turn every Envoy drain into Kubernetes Events and Prometheus metrics (runs in the cluster)',
    flags: REPORT_FLAGS,
    usage: REPORT_USAGE,
    exitCodes: REPORT_EXIT_CODES,
  },
  {
    name: 'version',
    summary: "print drainguard's version, and the cluster's when one is reachable",
    flags: VERSION_FLAGS,
    usage: VERSION_USAGE,
    exitCodes: VERSION_EXIT_CODES,
  },
  {
    name: 'completion',
    summary: 'print a shell completion script (bash, zsh, fish)',
    flags: COMPLETION_FLAGS,
    usage: COMPLETION_USAGE,
    exitCodes: COMPLETION_EXIT_CODES,
    argument: SHELLS,
  },
  {
    name: 'help',
    summary: "show this help, or a command's: drainguard help inject",
    flags: HELP_FLAGS,
    usage: `Usage: ${PROGRAM} help [COMMAND]\n\n${formatExitCodes(HELP_EXIT_CODES)}`,
    exitCodes: HELP_EXIT_CODES,
    // Read when used, so the names come from this very table.
    get argument() {
      return COMMANDS.map((command) => command.name);
    },
  },
];

export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((command) => command.name === name);
}

const MAIN_EXIT_CODES: ExitCodeTable = [
  [EXIT_OK, 'success'],
  [EXIT_USAGE, 'no command, or an unknown one'],
];

export const MAIN_USAGE = `Usage: ${PROGRAM} <command> [flags]

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(10)}  ${command.summary}`).join('\n')}

Run '${PROGRAM} <command> --help' for a command's flags and exit status.
Every command exits 2 for wrong flags and 4 for a drainguard bug; 1 is a finding, never an error.

${formatExitCodes(MAIN_EXIT_CODES)}`;

/** The completion script for `shell`, from the table above. */
export function completionFor(shell: Shell): string {
  return completionScript(shell, PROGRAM, COMMANDS);
}
