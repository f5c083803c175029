/**
 * The drain command: Envoy's preStop hook as the webhook writes it and `envoy-shutdown drain`
 * reads it, from one table of flags.
 * Part of the drain contract (index.ts): imports nothing outside this folder and nothing from Node.
 */
import type { AdminAddress } from './admin-address';
import { formatDuration } from './duration';
import { parseFlags, parseValue, type FlagKind, type FlagSpec, type ParsedFlags } from './flags';
import { UsageError } from './usage-error';

/** The drain program's file name, wherever it is installed, and its drain subcommand. */
export const PROGRAM_NAME = 'envoy-shutdown';
export const DRAIN_SUBCOMMAND = 'drain';

/** What `envoy-shutdown drain` is told to do. Each field is one flag of DRAIN_FLAGS. */
export interface DrainArguments {
  admin: AdminAddress;
  deadlineMs: number;
  drainDelayMs: number;
  minDrainMs: number;
  minConnections: number;
  pollIntervalMs: number;
  requestTimeoutMs: number;
  /** Listener stat segments (e.g. `0.0.0.0_8002`) and UDP proxies' stat prefixes matching any of these patterns are not counted. */
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
    help: 'exit once counted connections and UDP sessions together are at or below this',
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
    help: 'do not count listeners (or UDP proxies) whose stat name segment (e.g. 0.0.0.0_8002, a UDP stat prefix) matches PATTERN (^ and $ anchor, . is any character; e.g. _8002$)',
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
  return appendDrainArguments([], settings);
}

/** `formatDrainArguments`, appended to `args`. */
function appendDrainArguments(args: string[], settings: Partial<DrainArguments>): string[] {
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
  // Appended in place: a spread of the formatted list would copy it through the iteration protocol.
  return appendDrainArguments([programPath, DRAIN_SUBCOMMAND], settings);
}
