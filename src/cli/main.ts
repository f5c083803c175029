#!/usr/bin/env node
import { defaultConfig } from '../config/defaults';
import { loadConfigFile } from '../config/load';
import { mutate } from '../mutate';
import { VERSION } from '../version';
import { runCheckCommand } from './check';
import { COMMANDS, COMPLETION_USAGE, completionFor, findCommand, MAIN_USAGE, PROGRAM } from './commands';
import { SHELLS, type Shell } from './completion';
import { EXIT_OK, EXIT_USAGE, reportError, UsageError } from './errors';
import { readSourceFile, runInject } from './inject';
import { runReport } from './report';
import { runServe } from './serve';
import { didYouMean } from './suggest';
import { paintFor } from './terminal';
import { runVersionCommand } from './version-command';

/** The `drainguard` command: dispatches to a subcommand and turns its errors into messages and exit codes. */

const write = (stream: NodeJS.WriteStream) => (text: string) => void stream.write(text);

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  const env = process.env;
  switch (command) {
    case 'inject':
      return runInject(rest, {
        mutate,
        defaultConfig,
        loadConfigFile,
        readSource: readSourceFile,
        stdout: write(process.stdout),
        stderr: write(process.stderr),
        paint: paintFor(process.stdout, env),
      });
    case 'serve':
      return runServe(rest);
    case 'check':
      return runCheckCommand(rest, {
        stdout: write(process.stdout),
        env,
        paint: paintFor(process.stdout, env),
        // Progress of --wait rewrites one line: only for a person watching a terminal.
        ...(process.stderr.isTTY ? { progress: write(process.stderr) } : {}),
      });
    case 'report':
      return runReport(rest);
    case 'version':
      return runVersionCommand(rest, { stdout: write(process.stdout), env });
    case '--version':
      process.stdout.write(`${PROGRAM} ${VERSION}\n`);
      return EXIT_OK;
    case 'completion':
      return completion(rest);
    case 'help':
    case '--help':
    case '-h':
      return showHelp(rest);
    case undefined:
      process.stderr.write(MAIN_USAGE);
      return EXIT_USAGE;
    default: {
      const names = COMMANDS.map((spec) => spec.name);
      throw new UsageError(`${PROGRAM}: unknown command '${command}'${didYouMean(command, names)} (run '${PROGRAM} --help')`);
    }
  }
}

function completion(args: readonly string[]): number {
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
    process.stdout.write(COMPLETION_USAGE);
    return EXIT_OK;
  }
  const [shell, ...extra] = args;
  if (shell === undefined || extra.length > 0 || !(SHELLS as readonly string[]).includes(shell)) {
    const hint = shell === undefined ? '' : didYouMean(shell, SHELLS);
    throw new UsageError(`${PROGRAM} completion: name one shell: ${SHELLS.join(', ')}${hint} (see '${PROGRAM} completion --help')`);
  }
  process.stdout.write(completionFor(shell as Shell));
  return EXIT_OK;
}

async function showHelp(topics: readonly string[]): Promise<number> {
  const [topic, ...extra] = topics;
  if (topic === undefined) {
    process.stdout.write(MAIN_USAGE);
    return EXIT_OK;
  }
  // `drainguard help --help`: the help command's own usage, as every other command answers --help.
  const spec = findCommand(topic === '--help' || topic === '-h' ? 'help' : topic);
  if (!spec || extra.length > 0) {
    const names = COMMANDS.map((command) => command.name);
    throw new UsageError(`${PROGRAM} help: no help for '${topics.join(' ')}'${didYouMean(topic, names)}; commands: ${names.join(', ')}`);
  }
  process.stdout.write(spec.usage);
  return EXIT_OK;
}

// `drainguard inject -f x.yaml | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(process.exitCode ?? EXIT_OK);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.exitCode = reportError(error, write(process.stderr));
  },
);
