#!/usr/bin/env node
import { defaultConfig } from '../config/defaults';
import { loadConfigFile } from '../config/load';
import { mutate } from '../mutate';
import { VERSION } from '../version';
import { CHECK_USAGE, runCheckCommand } from './check';
import { EXIT_OK, EXIT_USAGE, reportError, UsageError } from './errors';
import { INJECT_USAGE, readSourceFile, runInject } from './inject';
import { runServe } from './serve';

/** The `drainguard` command: dispatches to a subcommand and turns its errors into messages and exit codes. */

const USAGE = `Usage: drainguard <command> [flags]

Commands:
  inject    rewrite Envoy pods and workloads in YAML files as the webhook would (offline)
  serve     run the HTTPS admission webhook
  check     check, read-only, which Envoy pods in a cluster are protected, and the installation
  version   print the version
  help      show this help, or a command's: drainguard help inject

Run 'drainguard <command> --help' for a command's flags.
`;

const write = (stream: NodeJS.WriteStream) => (text: string) => void stream.write(text);

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'inject':
      return runInject(rest, {
        mutate,
        defaultConfig,
        loadConfigFile,
        readSource: readSourceFile,
        stdout: write(process.stdout),
        stderr: write(process.stderr),
      });
    case 'serve':
      return runServe(rest);
    case 'check':
      return runCheckCommand(rest, { stdout: write(process.stdout), env: process.env });
    case 'version':
    case '--version':
      process.stdout.write(`drainguard ${VERSION}\n`);
      return EXIT_OK;
    case 'help':
    case '--help':
    case '-h':
      return showHelp(rest);
    case undefined:
      process.stderr.write(USAGE);
      return EXIT_USAGE;
    default:
      throw new UsageError(`drainguard: unknown command '${command}'; run 'drainguard --help'`);
  }
}

async function showHelp(topics: readonly string[]): Promise<number> {
  const [topic] = topics;
  if (topic === undefined) process.stdout.write(USAGE);
  else if (topic === 'inject') process.stdout.write(INJECT_USAGE);
  else if (topic === 'check') process.stdout.write(CHECK_USAGE);
  // serve owns its flags, so it prints its own usage.
  else if (topic === 'serve') return runServe(['--help']);
  else throw new UsageError(`drainguard help: no help for '${topic}'; commands: inject, serve, check, version`);
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
