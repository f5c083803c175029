/**
 * The upstream commands an Envoy pod runs around Envoy, and their flags: Contour's and Envoy Gateway's
 * `envoy shutdown-manager` (the sidecar), `envoy shutdown` (the sidecar's preStop, or Envoy's own), and
 * Contour's `bootstrap` (the init container that writes Envoy's bootstrap). Their flags tell where
 * Envoy's admin listens and how the user configured the drain (docs/upstream-shapes.md, sections 1-3).
 *
 * Both binaries parse flags the Go way (kingpin for Contour, cobra for Envoy Gateway): `--name=value`
 * or `--name value` in two arguments; a flag and its value never share one argument.
 */
import type { Container, Pod } from '../../k8s';
import { basename, type SidecarRef } from './detect';

export type UpstreamProgram = 'contour' | 'envoy-gateway';
export type UpstreamSubcommand = 'shutdown' | 'shutdown-manager' | 'bootstrap';

export interface UpstreamFlag {
  /** Without the dashes: `check-delay`. */
  name: string;
  /** Undefined for a flag given without a value (a boolean, or a flag at the end of the line). */
  value: string | undefined;
  /** As written, for messages (cut after 64 characters): `--check-delay=5s` or `--check-delay 5s`. */
  text: string;
}

export interface UpstreamCommand {
  program: UpstreamProgram;
  subcommand: UpstreamSubcommand;
  containerName: string;
  /** Whether the command is the container's own command line or its preStop hook. */
  place: 'command' | 'preStop';
  flags: UpstreamFlag[];
}

/** `contour envoy shutdown` (container shutdown-manager, preStop): where a flag was read, for messages. */
export function describeCommand(command: UpstreamCommand): string {
  const words = command.subcommand === 'bootstrap' ? `${command.program} bootstrap` : `${command.program} envoy ${command.subcommand}`;
  return `\`${words}\` (container ${command.containerName}${command.place === 'preStop' ? ', preStop' : ''})`;
}

function programOf(word: string | undefined): UpstreamProgram | undefined {
  const program = basename(word ?? '');
  return program === 'contour' || program === 'envoy-gateway' ? program : undefined;
}

/** Where the subcommand's words end, and which subcommand it is; one pass over the arguments. */
function findSubcommand(argv: readonly string[]): { program: UpstreamProgram; subcommand: UpstreamSubcommand; end: number } | undefined {
  for (let i = 0; i < argv.length; i += 1) {
    const program = programOf(argv[i]);
    if (program === undefined) continue;
    if (program === 'contour' && argv[i + 1] === 'bootstrap') return { program, subcommand: 'bootstrap', end: i + 2 };
    const third = argv[i + 2];
    if (argv[i + 1] === 'envoy' && (third === 'shutdown' || third === 'shutdown-manager')) return { program, subcommand: third, end: i + 3 };
  }
  return undefined;
}

/** A flag's name after the dashes and before any `=`. */
const FLAG_NAME = /^[A-Za-z0-9][A-Za-z0-9-]*$/;
const WARNING_FLAG_LENGTH = 64;

/** A flag as written, cut short: it is quoted into warnings, which the API server truncates. */
function truncatedForWarning(text: string): string {
  return text.length > WARNING_FLAG_LENGTH ? `${text.slice(0, WARNING_FLAG_LENGTH - 3)}...` : text;
}

/** The flags after the subcommand; arguments that are not flags (Contour bootstrap's path) are skipped. */
function parseFlags(argv: readonly string[], from: number): UpstreamFlag[] {
  const flags: UpstreamFlag[] = [];
  for (let i = from; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) continue;
    // `--name=value` splits at the first `=` (a name holds none); `--name` alone takes the next argument.
    const equals = arg.indexOf('=');
    const name = equals === -1 ? arg.slice(2) : arg.slice(2, equals);
    if (!FLAG_NAME.test(name)) continue;
    if (equals !== -1) {
      flags.push({ name, value: arg.slice(equals + 1), text: truncatedForWarning(arg) });
      continue;
    }
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith('-')) {
      flags.push({ name, value: next, text: truncatedForWarning(`--${name} ${next}`) });
      i += 1;
    } else {
      flags.push({ name, value: undefined, text: truncatedForWarning(`--${name}`) });
    }
  }
  return flags;
}

function readCommand(argv: readonly string[], containerName: string, place: UpstreamCommand['place']): UpstreamCommand | undefined {
  const found = findSubcommand(argv);
  if (found === undefined) return undefined;
  return { program: found.program, subcommand: found.subcommand, containerName, place, flags: parseFlags(argv, found.end) };
}

/** The string elements of the lists, in order: a hand-written pod may hold anything. */
function stringsOf(...lists: (readonly unknown[] | undefined)[]): string[] {
  const found: string[] = [];
  for (const list of lists) for (const word of list ?? []) if (typeof word === 'string') found.push(word);
  return found;
}

/**
 * The shutdown commands of the sidecars (their own command line and their preStop) and of Envoy's own
 * preStop when it runs `contour envoy shutdown` itself, in that order.
 */
export function shutdownCommands(envoy: Container, sidecars: readonly SidecarRef[]): UpstreamCommand[] {
  const found: UpstreamCommand[] = [];
  for (const { container } of sidecars) {
    for (const command of [
      readCommand(stringsOf(container.lifecycle?.preStop?.exec?.command), container.name, 'preStop'),
      readCommand(stringsOf(container.command, container.args), container.name, 'command'),
    ]) {
      if (command !== undefined && command.subcommand !== 'bootstrap') found.push(command);
    }
  }
  const own = readCommand(stringsOf(envoy.lifecycle?.preStop?.exec?.command), envoy.name, 'preStop');
  if (own !== undefined && own.subcommand === 'shutdown') found.push(own);
  return found;
}

/** `contour bootstrap` in the pod's (non-sidecar) init containers. */
export function contourBootstrapCommands(pod: Pod): UpstreamCommand[] {
  const found: UpstreamCommand[] = [];
  for (const container of pod.spec.initContainers ?? []) {
    if (container.restartPolicy === 'Always') continue;
    const command = readCommand(stringsOf(container.command, container.args), container.name, 'command');
    if (command !== undefined && command.subcommand === 'bootstrap') found.push(command);
  }
  return found;
}

/** The last occurrence of flag `name` in `command` (Go flag parsers keep the last value). */
export function flagOf(command: UpstreamCommand, name: string): UpstreamFlag | undefined {
  let last: UpstreamFlag | undefined;
  for (const flag of command.flags) if (flag.name === name) last = flag;
  return last;
}
