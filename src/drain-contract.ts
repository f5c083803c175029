/**
 * The drain contract: the command line of Envoy's preStop hook, as the webhook writes it and as
 * `envoy-shutdown drain` reads it (docs/design.md, "The preStop hook and its arguments"). Both sides
 * use this one file, so they cannot disagree: one table of flags with their defaults, one formatter
 * (the webhook), one parser (the program), one admin-address check, one duration syntax, one
 * usage error, and the ranges both sides accept.
 *
 * It imports nothing, not even Node's modules: it is bundled into the drain program, which must run
 * as a static executable without Node's APIs.
 */

/** The drain program's file name, wherever it is installed, and its drain subcommand. */
export const PROGRAM_NAME = 'envoy-shutdown';
export const DRAIN_SUBCOMMAND = 'drain';

/** A command line the program refuses (it exits 2 with the message). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

// ── The ranges both sides accept ───────────────────────────────────────────────────────────────

/**
 * The longest duration (deadline, delay, minimum drain, poll interval, timeout) either side accepts:
 * about 23 days. It stays below 2^31 − 1 ms (about 24.8 days), the longest delay a JavaScript timer
 * holds, so even a program that arms one timer for its whole deadline is right. The webhook caps
 * the deadline it derives from a longer grace period at this value.
 */
export const MAX_DEADLINE_SECONDS = 2_000_000;
const MAX_DURATION_MS = MAX_DEADLINE_SECONDS * 1000;

/** The largest connection threshold either side accepts. */
export const MAX_MIN_CONNECTIONS = 1_000_000;

// ── Durations ──────────────────────────────────────────────────────────────────────────────────

/** Whole seconds or milliseconds, no leading zeros: `290s`, `500ms`, `0s`. */
const DURATION = /^(0|[1-9][0-9]{0,9})(ms|s)$/;

export const DURATION_FORM = `a whole number of seconds or milliseconds such as 290s or 500ms, at most ${MAX_DEADLINE_SECONDS}s`;

/** A duration in milliseconds; undefined when it is not written as above or exceeds MAX_DEADLINE_SECONDS. */
export function parseDuration(text: string): number | undefined {
  // A test and a slice rather than exec: no match array for a value read on every admission.
  if (!DURATION.test(text)) return undefined;
  const seconds = !text.endsWith('ms');
  const amount = Number(text.slice(0, text.length - (seconds ? 1 : 2)));
  const ms = seconds ? amount * 1000 : amount;
  return ms <= MAX_DURATION_MS ? ms : undefined;
}

/** The shortest text `parseDuration` reads back as `ms`: `5s` rather than `5000ms`. */
export function formatDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

// ── The admin address ──────────────────────────────────────────────────────────────────────────

/**
 * Where Envoy's admin API is. It becomes an exec argument of a hook inside the pod, and draining
 * must only ever be possible from inside the pod (docs/design.md, "Security model"), so only two
 * shapes exist: a unix socket path, or a loopback IP literal that is connected to as it is, never
 * looked up. `text` is the address as written; `host` is the literal to connect to.
 */
export type AdminAddress =
  | { kind: 'unix'; text: string; path: string }
  | { kind: 'tcp'; text: string; host: string; port: number };

export type AdminAddressReading = { ok: true; address: AdminAddress } | { ok: false; problem: string };

export const ADMIN_ADDRESS_FORM =
  'unix:/absolute/path (letters, digits, ".", "_", "-", "/"; no ".." segment, no "." segment; at most 107 bytes) ' +
  'or http://127.0.0.1:PORT (any 127.x.y.z in plain decimal), http://[::1]:PORT, http://localhost:PORT';

/** sun_path holds 108 bytes including the terminating NUL. */
export const MAX_UNIX_SOCKET_PATH_BYTES = 107;
/**
 * One or more `/segment`s, each of letters, digits, ".", "_" or "-": no empty segment, no trailing
 * slash. The slash is outside the class, so the match is linear.
 */
const SEGMENTED_PATH = /^(\/[A-Za-z0-9._-]+)+$/;
/** A "." or ".." segment. */
const DOT_SEGMENT = /\/\.\.?(\/|$)/;
/** A decimal octet as an IP literal is written: no sign, no leading zero (`010` is octal to some parsers). */
const OCTET = /^(0|[1-9][0-9]{0,2})$/;
const PORT = /^[1-9][0-9]{0,4}$/;

/** Why `path` is not an absolute path of plain segments of at most `maxBytes`, or undefined. */
function plainPathProblem(path: string, maxBytes: number, what: string): string | undefined {
  // Checked before the segments, so an enormous value costs no more than this comparison.
  if (path.length > maxBytes) return `${what} is longer than ${maxBytes} bytes`;
  if (!SEGMENTED_PATH.test(path) || DOT_SEGMENT.test(path)) {
    return 'each path segment must be letters, digits, ".", "_" or "-", and not "." or ".."';
  }
  return undefined;
}

function unixProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'a unix socket needs an absolute path, e.g. unix:/admin/admin.sock';
  return plainPathProblem(path, MAX_UNIX_SOCKET_PATH_BYTES, 'the socket path');
}

// ── The termination message file ───────────────────────────────────────────────────────────────

/**
 * Where the drain leaves its record (src/drain-record.ts): the Envoy container's own
 * `terminationMessagePath`, which the kubelet bind-mounts over a file it created with mode 0666. The
 * same plain-segment rule as a unix socket path: nothing in it needs quoting, and no `..` can lead the
 * write elsewhere. Kubernetes' own default is /dev/termination-log.
 */
export const MAX_TERMINATION_MESSAGE_PATH_BYTES = 1024;
export const TERMINATION_MESSAGE_PATH_FORM =
  `an absolute path of letters, digits, ".", "_", "-" and "/" (no empty, "." or ".." segment), at most ${MAX_TERMINATION_MESSAGE_PATH_BYTES} bytes`;

/** Why `path` cannot be the drain's `--termination-message-path`, or undefined when it can. */
export function terminationMessagePathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'the termination message path must be absolute, e.g. /dev/termination-log';
  return plainPathProblem(path, MAX_TERMINATION_MESSAGE_PATH_BYTES, 'the termination message path');
}

/** The IP literal to connect to for `host`, or undefined when it is not a loopback literal. */
function loopbackLiteral(host: string): string | undefined {
  if (host === '[::1]') return '::1';
  // Mapped, never resolved: a hosts file must not be able to send the drain anywhere else.
  if (host === 'localhost') return '127.0.0.1';
  const octets = host.split('.');
  if (octets.length !== 4 || octets[0] !== '127') return undefined;
  return octets.every((octet) => OCTET.test(octet) && Number(octet) <= 255) ? host : undefined;
}

/** Checks an admin address: the one check the webhook and the program both apply. */
export function readAdminAddress(text: string): AdminAddressReading {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length);
    const problem = unixProblem(path);
    return problem === undefined ? { ok: true, address: { kind: 'unix', text, path } } : { ok: false, problem };
  }
  if (!text.startsWith('http://')) return { ok: false, problem: 'expected unix:/PATH or http://HOST:PORT with a loopback HOST' };
  const hostAndPort = text.slice('http://'.length);
  const portColon = hostAndPort.startsWith('[') ? hostAndPort.indexOf(']') + 1 : hostAndPort.indexOf(':');
  if (portColon <= 0 || hostAndPort[portColon] !== ':') return { ok: false, problem: 'expected http://HOST:PORT, nothing before or after' };
  const host = hostAndPort.slice(0, portColon);
  const portText = hostAndPort.slice(portColon + 1);
  const literal = loopbackLiteral(host);
  if (literal === undefined) {
    return {
      ok: false,
      problem: `${host.length > 64 ? `${host.slice(0, 61)}...` : host} is not a loopback IP literal (127.0.0.0/8 in plain decimal, [::1], or localhost)`,
    };
  }
  if (!PORT.test(portText) || Number(portText) > 65535) {
    return { ok: false, problem: 'the port must be a whole number from 1 to 65535, without leading zeros' };
  }
  return { ok: true, address: { kind: 'tcp', text, host: literal, port: Number(portText) } };
}

// ── Listener patterns ──────────────────────────────────────────────────────────────────────────

/**
 * `--exclude-listener`: which listener stat segments (`0.0.0.0_8002`, `[::]_8002`, `ingress_https`) the
 * drain does not count. Not a regular expression: a pattern is matched against every listener name on
 * every poll, inside Envoy's cgroup, and a regular expression's cost can grow without bound with the
 * name ("(a+)+$"). The syntax is the part of regular expressions that listener exclusions use — a
 * suffix (`_8002$`, what the webhook writes), a prefix (`^ingress_`), a whole name (`^stats$`) or a
 * part of one — and it means what the same text means as a regular expression:
 *
 *   `^` at the start and `$` at the end anchor; `.` is any one character; `\` makes the next
 *   punctuation character literal (`\.`, `\[`); every other character stands for itself.
 *
 * Refused: `* + ? | ( ) [ ] { }` unescaped, `^`/`$` elsewhere, other escapes (`\d`), control
 * characters, an empty pattern (it would exclude every listener), more than 256 characters. Several
 * patterns are several flags. Matching costs at most (name length × pattern length): linear in the name.
 */
export interface ListenerPattern {
  anchoredStart: boolean;
  anchoredEnd: boolean;
  /** One entry per character to match: the character, or null for `.` (any one). */
  units: readonly (string | null)[];
}

export const MAX_LISTENER_PATTERN_LENGTH = 256;
export const LISTENER_PATTERN_FORM =
  'a listener name pattern: an optional ^, characters (. is any one, \\ before punctuation makes it literal), an optional $; no * + ? | ( ) [ ] { }';
const PATTERN_SPECIAL = new Set(['*', '+', '?', '|', '(', ')', '[', ']', '{', '}']);
const ESCAPABLE = /^[!-/:-@[-`{-~]$/;

export type ListenerPatternReading = { ok: true; pattern: ListenerPattern } | { ok: false; problem: string };

/** Reads a `--exclude-listener` pattern: the one check the webhook and the program both apply. */
export function readListenerPattern(text: string): ListenerPatternReading {
  if (text.length === 0) return { ok: false, problem: 'an empty pattern would exclude every listener' };
  if (text.length > MAX_LISTENER_PATTERN_LENGTH) return { ok: false, problem: `longer than ${MAX_LISTENER_PATTERN_LENGTH} characters` };
  const anchoredStart = text.startsWith('^');
  let end = text.length;
  const units: (string | null)[] = [];
  let anchoredEnd = false;
  for (let i = anchoredStart ? 1 : 0; i < end; i++) {
    const c = text[i] as string;
    if (c === '\\') {
      const next = text[i + 1];
      if (next === undefined || !ESCAPABLE.test(next)) return { ok: false, problem: `\\${next ?? ''} at ${i}: only punctuation can be escaped` };
      units.push(next);
      i++;
    } else if (c === '$') {
      if (i !== text.length - 1) return { ok: false, problem: `$ at ${i}: only at the end` };
      anchoredEnd = true;
      end = i;
    } else if (c === '^') {
      return { ok: false, problem: `^ at ${i}: only at the start` };
    } else if (PATTERN_SPECIAL.has(c)) {
      return { ok: false, problem: `${c} at ${i} is not supported (repeat the flag for several names)` };
    } else if (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) {
      return { ok: false, problem: `a control character at ${i}` };
    } else {
      units.push(c === '.' ? null : c);
    }
  }
  if (units.length === 0 && !(anchoredStart && anchoredEnd)) return { ok: false, problem: 'an empty pattern would exclude every listener' };
  return { ok: true, pattern: { anchoredStart, anchoredEnd, units } };
}

// ── Flags ──────────────────────────────────────────────────────────────────────────────────────

export type FlagKind = 'duration' | 'count' | 'address' | 'listener-pattern' | 'file' | 'string' | 'boolean';

export interface FlagSpec {
  readonly kind: FlagKind;
  readonly help: string;
  /** As the user would type it: shown in the usage text, and parsed like a given value when the flag is absent. */
  readonly default?: string;
  readonly repeatable?: boolean;
  /** A single-valued flag that may be left out, and then sets nothing. */
  readonly optional?: boolean;
  /** Durations only: 0 is refused. */
  readonly positive?: boolean;
  /** Name of the value in the usage text (e.g. DIR); derived from the kind when absent. */
  readonly placeholder?: string;
}

/** duration → milliseconds, count → number, address → AdminAddress, listener-pattern → its (valid) text, file → the path, boolean → true. */
export type FlagValue = number | string | boolean | AdminAddress;
export type ParsedFlags = Map<string, FlagValue[]>;

const PLACEHOLDERS: Record<FlagKind, string> = { duration: 'DURATION', count: 'N', address: 'ADDRESS', 'listener-pattern': 'PATTERN', file: 'PATH', string: 'VALUE', boolean: '' };

function shown(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 61)}...` : text);
}

/** A count as written: no sign, no leading zero, at most 7 digits (the range is checked after). */
const COUNT = /^(0|[1-9][0-9]{0,6})$/;
/** `--name` or `--name=value`; the value may hold anything, newlines included. */
const FLAG_ARGUMENT = /^--([a-z][a-z-]*)(?:=(.*))?$/s;

function parseValue(name: string, spec: FlagSpec, text: string): FlagValue {
  switch (spec.kind) {
    case 'duration': {
      const ms = parseDuration(text);
      if (ms === undefined) throw new UsageError(`--${name} ${shown(text)}: expected ${DURATION_FORM}`);
      if (spec.positive && ms === 0) throw new UsageError(`--${name} must be greater than 0`);
      return ms;
    }
    case 'count': {
      const count = COUNT.test(text) ? Number(text) : Infinity;
      if (count > MAX_MIN_CONNECTIONS) throw new UsageError(`--${name} ${shown(text)}: expected a whole number from 0 to ${MAX_MIN_CONNECTIONS}`);
      return count;
    }
    case 'address': {
      const reading = readAdminAddress(text);
      if (!reading.ok) throw new UsageError(`--${name}: admin address ${shown(text)}: ${reading.problem}`);
      return reading.address;
    }
    case 'listener-pattern': {
      const reading = readListenerPattern(text);
      if (!reading.ok) throw new UsageError(`--${name} ${shown(text)}: ${reading.problem}; expected ${LISTENER_PATTERN_FORM}`);
      return text;
    }
    case 'file': {
      const problem = terminationMessagePathProblem(text);
      if (problem !== undefined) throw new UsageError(`--${name} ${shown(text)}: ${problem}`);
      return text;
    }
    case 'string':
      return text;
    case 'boolean':
      return true;
  }
}

/**
 * A strict flag parser: `--name value` or `--name=value`. Every value the webhook writes becomes
 * part of an exec hook, so anything unexpected (an unknown flag, a missing or malformed value, a
 * single-valued flag given twice, a stray argument) is a UsageError rather than a guess.
 */
export function parseFlags(args: readonly string[], specs: Readonly<Record<string, FlagSpec>>): ParsedFlags {
  const parsed: ParsedFlags = new Map();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const match = FLAG_ARGUMENT.exec(arg);
    if (!match) throw new UsageError(`unexpected argument ${shown(arg)}`);
    const name = match[1] as string;
    // Not Object.hasOwn: the drain program's runtime (QuickJS 2021-03-27) predates ES2022.
    const spec = Object.prototype.hasOwnProperty.call(specs, name) ? specs[name] : undefined;
    if (spec === undefined) throw new UsageError(`unknown flag --${name}`);
    let text = match[2];
    if (spec.kind === 'boolean') {
      if (text !== undefined) throw new UsageError(`--${name} takes no value`);
    } else if (text === undefined) {
      text = args[++i];
      if (text === undefined) throw new UsageError(`--${name} needs a value`);
    }
    const values = parsed.get(name) ?? [];
    if (values.length > 0 && !spec.repeatable) throw new UsageError(`--${name} given more than once`);
    values.push(parseValue(name, spec, text ?? ''));
    parsed.set(name, values);
  }
  for (const [name, spec] of Object.entries(specs)) {
    if (!parsed.has(name) && spec.default !== undefined) parsed.set(name, [parseValue(name, spec, spec.default)]);
  }
  return parsed;
}

/** The flags part of a usage text: one entry per flag, with its default. */
export function flagUsage(specs: Readonly<Record<string, FlagSpec>>): string {
  return Object.entries(specs)
    .map(([name, spec]) => {
      const placeholder = spec.placeholder ?? PLACEHOLDERS[spec.kind];
      const value = placeholder ? ` ${placeholder}` : '';
      const extra = [spec.default !== undefined ? `default ${spec.default}` : '', spec.repeatable ? 'repeatable' : '']
        .filter(Boolean)
        .join(', ');
      return `  --${name}${value}\n      ${spec.help}${extra ? ` (${extra})` : ''}`;
    })
    .join('\n');
}

// ── The drain command ──────────────────────────────────────────────────────────────────────────

/** What `envoy-shutdown drain` is told to do. Each field is one flag of DRAIN_FLAGS. */
export interface DrainArguments {
  admin: AdminAddress;
  deadlineMs: number;
  drainDelayMs: number;
  minDrainMs: number;
  minConnections: number;
  pollIntervalMs: number;
  requestTimeoutMs: number;
  /** Listener stat segments (e.g. `0.0.0.0_8002`) matching any of these patterns are not counted. */
  excludeListeners: string[];
  /** Ask for `drain_listeners?inboundonly` (honoured only on Envoy ≥ 1.34). */
  inboundOnly: boolean;
  /** Where the drain record goes (the Envoy container's terminationMessagePath); absent: no record. */
  terminationMessagePath?: string;
}

/** The program's defaults. drainguard's configuration takes its drain defaults from here. */
export const DRAIN_DEFAULTS = {
  deadlineSeconds: 290,
  drainDelaySeconds: 0,
  minDrainSeconds: 5,
  minConnections: 0,
  pollIntervalSeconds: 1,
  requestTimeoutSeconds: 1,
} as const;

interface DrainFlagSpec extends FlagSpec {
  /** The field of DrainArguments this flag sets. */
  readonly setting: keyof DrainArguments;
}

/** Every flag of `drain`, in the order the webhook writes them. */
export const DRAIN_FLAGS = {
  admin: { setting: 'admin', kind: 'address', help: 'Envoy admin API: unix:/PATH or http://127.0.0.1:PORT (loopback or unix only)' },
  deadline: {
    setting: 'deadlineMs',
    kind: 'duration',
    positive: true,
    default: `${DRAIN_DEFAULTS.deadlineSeconds}s`,
    help: 'hard bound on the whole drain (grace period minus a margin)',
  },
  'drain-delay': {
    setting: 'drainDelayMs',
    kind: 'duration',
    default: `${DRAIN_DEFAULTS.drainDelaySeconds}s`,
    help: 'wait before failing the health check (load balancer deregistration)',
  },
  'min-drain': {
    setting: 'minDrainMs',
    kind: 'duration',
    default: `${DRAIN_DEFAULTS.minDrainSeconds}s`,
    help: 'minimum time between /healthcheck/fail and exit',
  },
  'min-connections': {
    setting: 'minConnections',
    kind: 'count',
    default: `${DRAIN_DEFAULTS.minConnections}`,
    help: 'exit once counted connections are at or below this',
  },
  'poll-interval': {
    setting: 'pollIntervalMs',
    kind: 'duration',
    positive: true,
    default: `${DRAIN_DEFAULTS.pollIntervalSeconds}s`,
    help: 'how often the listener gauges are read',
  },
  'exclude-listener': {
    setting: 'excludeListeners',
    kind: 'listener-pattern',
    repeatable: true,
    help: 'do not count listeners whose stat name segment (e.g. 0.0.0.0_8002) matches PATTERN (^ and $ anchor, . is any character; e.g. _8002$)',
  },
  'request-timeout': {
    setting: 'requestTimeoutMs',
    kind: 'duration',
    positive: true,
    default: `${DRAIN_DEFAULTS.requestTimeoutSeconds}s`,
    help: 'timeout of each admin API call',
  },
  'inbound-only': { setting: 'inboundOnly', kind: 'boolean', help: 'drain only inbound listeners (drain_listeners?inboundonly, Envoy >= 1.34)' },
  'termination-message-path': {
    setting: 'terminationMessagePath',
    kind: 'file',
    optional: true,
    help: "write the drain record to this file (the Envoy container's terminationMessagePath); none when absent",
  },
} as const satisfies Record<string, DrainFlagSpec>;

const DRAIN_FLAG_ENTRIES: readonly [string, DrainFlagSpec][] = Object.entries(DRAIN_FLAGS);

/**
 * Whether `drain` refuses a command line without this flag: one that has no default, holds one value,
 * is not a switch and is not optional. The parser fills in defaults first, so both the parser and the
 * formatter judge a missing flag by this.
 */
function isRequired(spec: DrainFlagSpec): boolean {
  return spec.default === undefined && !spec.repeatable && spec.kind !== 'boolean' && !spec.optional;
}

/** The settings `drain` runs with, from flags parsed against DRAIN_FLAGS. */
export function drainArguments(flags: ParsedFlags): DrainArguments {
  const settings: Partial<Record<keyof DrainArguments, unknown>> = {};
  for (const [name, spec] of DRAIN_FLAG_ENTRIES) {
    const values = flags.get(name) ?? [];
    if (spec.repeatable) settings[spec.setting] = values;
    else if (spec.kind === 'boolean') settings[spec.setting] = values.length > 0;
    else if (values.length > 0) settings[spec.setting] = values[0];
    else if (isRequired(spec)) throw new UsageError(`--${name} is required`);
  }
  return settings as DrainArguments;
}

/** `drain`'s arguments (after the subcommand) as its settings; throws UsageError. */
export function parseDrainArguments(args: readonly string[]): DrainArguments {
  return drainArguments(parseFlags(args, DRAIN_FLAGS));
}

function formatValue(kind: FlagKind, value: unknown): string {
  switch (kind) {
    case 'duration':
      return formatDuration(value as number);
    case 'address':
      return (value as AdminAddress).text;
    default:
      return String(value);
  }
}


const NO_VALUES: readonly unknown[] = [];

/**
 * The arguments that give `drain` these settings, in table order. A setting left out is left to the
 * program's default; a false boolean is not written.
 *
 * Throws when the result is not something the program accepts: a hook the program refuses would
 * fail at shutdown, with no drain at all, so such a value is a drainguard bug to stop here. Each
 * value written is checked with the parser's own `parseValue`, and the table's structural rules
 * (required, single-valued) with the parser's messages; the other refusals of `parseFlags` (an
 * unknown flag, a missing value, a stray argument) cannot arise from a command line written from the
 * table. This costs a fraction of parsing the whole command line back, and the contract tests
 * check that every command line written is read back as the settings it was written from.
 */
export function formatDrainArguments(settings: Partial<DrainArguments>): string[] {
  const args: string[] = [];
  try {
    for (const [name, spec] of DRAIN_FLAG_ENTRIES) {
      const value = settings[spec.setting];
      const values: readonly unknown[] = value === undefined || value === false ? NO_VALUES : Array.isArray(value) ? value : [value];
      if (values.length === 0 && isRequired(spec)) throw new UsageError(`--${name} is required`);
      if (values.length > 1 && !spec.repeatable) throw new UsageError(`--${name} given more than once`);
      for (const one of values) {
        args.push(`--${name}`);
        if (spec.kind === 'boolean') continue;
        const text = formatValue(spec.kind, one);
        parseValue(name, spec, text);
        args.push(text);
      }
    }
  } catch (error) {
    throw new Error(`drainguard bug: ${PROGRAM_NAME} ${DRAIN_SUBCOMMAND} would refuse the arguments it was given: ${(error as Error).message}`);
  }
  return args;
}

/** The exec command of Envoy's preStop hook: the installed program, `drain`, and the arguments. */
export function drainCommand(programPath: string, settings: Partial<DrainArguments>): string[] {
  return [programPath, DRAIN_SUBCOMMAND, ...formatDrainArguments(settings)];
}
