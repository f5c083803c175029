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
import { loopbackAddressFor } from './envoy-args';
import type { SidecarRef } from './sidecars';
import { flagMeaning, type FlagMeaning, type ShutdownSubcommand, type UpstreamProgram } from './upstream-flags';
import { isProgram } from './words';

type UpstreamSubcommand = ShutdownSubcommand | 'bootstrap';

export interface UpstreamFlag {
  /** Without the dashes: `check-delay`. */
  name: string;
  /** Undefined for a flag given without a value (a boolean, or a flag at the end of the line). */
  value: string | undefined;
  /** As written, for messages (cut after 64 characters): `--check-delay=5s` or `--check-delay 5s`. */
  text: string;
}

/** A flag of a shutdown command, with what it means to drainguard. */
export interface ShutdownFlag extends UpstreamFlag {
  meaning: FlagMeaning;
}

/** The admin address a command's flags name: the last `--admin-address` and the last `--admin-port` (Go flag parsers keep the last value). */
export interface AdminFlags {
  /** `--admin-address`, as an address: a path is the socket, a host the TCP admin with the command's port. */
  address?: { value: string; text: string };
  /** `--admin-port`: Contour's admin port before the socket. */
  port?: { value: string; text: string };
}

interface CommandReading {
  program: UpstreamProgram;
  containerName: string;
  /** Whether the command is the container's own command line or its preStop hook. */
  place: 'command' | 'preStop';
  /** `` `contour envoy shutdown` (container shutdown-manager, preStop) ``: where a flag was read, for messages. */
  where: string;
  admin: AdminFlags;
}

/** `contour envoy shutdown` or `contour envoy shutdown-manager` (and Envoy Gateway's). */
export interface ShutdownCommand extends CommandReading {
  subcommand: ShutdownSubcommand;
  flags: ShutdownFlag[];
}

/** `contour bootstrap`, which writes Envoy's bootstrap in an init container. */
export interface BootstrapCommand extends CommandReading {
  subcommand: 'bootstrap';
  flags: UpstreamFlag[];
}

function describeCommand(program: UpstreamProgram, subcommand: UpstreamSubcommand, containerName: string, place: CommandReading['place']): string {
  const words = subcommand === 'bootstrap' ? `${program} bootstrap` : `${program} envoy ${subcommand}`;
  return `\`${words}\` (container ${containerName}${place === 'preStop' ? ', preStop' : ''})`;
}

/** Contour's admin before the socket (`contour bootstrap` defaults: 127.0.0.1, port 9001). */
export const CONTOUR_TCP_ADMIN_PORT = 9001;

function programOf(word: string | undefined): UpstreamProgram | undefined {
  if (word === undefined) return undefined;
  if (isProgram(word, 'contour')) return 'contour';
  return isProgram(word, 'envoy-gateway') ? 'envoy-gateway' : undefined;
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

/** The last occurrence of flag `name` (Go flag parsers keep the last value). */
function lastFlag<F extends UpstreamFlag>(flags: readonly F[], name: string): F | undefined {
  let last: F | undefined;
  for (const flag of flags) if (flag.name === name) last = flag;
  return last;
}

/**
 * `--admin-address` of a Contour command: a path is the socket (from the socket on); a host is the TCP
 * admin with the command's `--admin-port` (before it; `contour bootstrap` defaults the port to 9001).
 */
function addressFlagValue(value: string, port: string | undefined): string {
  if (value.startsWith('/')) return `unix:${value}`;
  if (value.startsWith('unix:') || value.startsWith('http://')) return value;
  const hostPort = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value);
  if (hostPort) return loopbackAddressFor(hostPort[1] as string, Number(hostPort[2])) ?? value;
  const portNumber = port !== undefined && /^\d{1,5}$/.test(port) ? Number(port) : CONTOUR_TCP_ADMIN_PORT;
  return loopbackAddressFor(value, portNumber) ?? value;
}

function adminFlags(flags: readonly UpstreamFlag[]): AdminFlags {
  const address = lastFlag(flags, 'admin-address');
  const port = lastFlag(flags, 'admin-port');
  const admin: AdminFlags = {};
  if (address?.value !== undefined) admin.address = { value: addressFlagValue(address.value, port?.value), text: address.text };
  if (port?.value !== undefined) admin.port = { value: port.value, text: port.text };
  return admin;
}

function readCommand(argv: readonly string[], containerName: string, place: CommandReading['place']): ShutdownCommand | BootstrapCommand | undefined {
  const found = findSubcommand(argv);
  if (found === undefined) return undefined;
  const { program, subcommand } = found;
  const flags = parseFlags(argv, found.end);
  const where = describeCommand(program, subcommand, containerName, place);
  const admin = adminFlags(flags);
  if (subcommand === 'bootstrap') return { program, containerName, place, where, admin, subcommand, flags };
  const meant: ShutdownFlag[] = [];
  for (const { name, value, text } of flags) meant.push({ name, value, text, meaning: flagMeaning(program, subcommand, name, value) });
  return { program, containerName, place, where, admin, subcommand, flags: meant };
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
export function shutdownCommands(envoy: Container, sidecars: readonly SidecarRef[]): ShutdownCommand[] {
  const found: ShutdownCommand[] = [];
  for (const { container } of sidecars) {
    const preStop = readCommand(stringsOf(container.lifecycle?.preStop?.exec?.command), container.name, 'preStop');
    if (preStop !== undefined && preStop.subcommand !== 'bootstrap') found.push(preStop);
    const command = readCommand(stringsOf(container.command, container.args), container.name, 'command');
    if (command !== undefined && command.subcommand !== 'bootstrap') found.push(command);
  }
  const own = readCommand(stringsOf(envoy.lifecycle?.preStop?.exec?.command), envoy.name, 'preStop');
  if (own !== undefined && own.subcommand === 'shutdown') found.push(own);
  return found;
}

/** `contour bootstrap` in the pod's (non-sidecar) init containers. */
export function contourBootstrapCommands(pod: Pod): BootstrapCommand[] {
  const found: BootstrapCommand[] = [];
  for (const container of pod.spec.initContainers ?? []) {
    if (container.restartPolicy === 'Always') continue;
    const command = readCommand(stringsOf(container.command, container.args), container.name, 'command');
    if (command !== undefined && command.subcommand === 'bootstrap') found.push(command);
  }
  return found;
}
