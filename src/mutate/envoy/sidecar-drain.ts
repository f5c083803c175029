/**
 * The drain settings a user gave the upstream shutdown-manager, carried over into drainguard's drain
 * (docs/pod-changes.md, "Drain settings"). Each flag of the sidecar's commands either maps to a drain
 * setting, names the admin address (read in admin.ts), or has no drainguard equivalent and is reported.
 *
 * A flag that is absent means the component's default at its release (upstream-defaults.ts). A flag
 * whose loss changes nothing (the file handshake's and the sidecar server's) is listed for `--explain`
 * only; a flag drainguard cannot keep is a warning.
 */
import { DRAIN_SETTING_RANGES, type Range } from '../../config/ranges';
import { MAX_DEADLINE_SECONDS } from '../../drain-contract';
import { parseGoDuration } from './go-duration';
import { describeCommand, type UpstreamCommand, type UpstreamFlag, type UpstreamProgram } from './upstream-commands';

/**
 * The drain settings a sidecar flag (or its component's default) can give. `drainTimeoutSeconds` (the
 * drain's own bound) and `readyTimeoutSeconds` (how long Envoy's preStop waits for the sidecar) both
 * bound the deadline.
 */
export type CarriedSetting = 'drainDelaySeconds' | 'minDrainSeconds' | 'pollIntervalSeconds' | 'minConnections' | 'drainTimeoutSeconds' | 'readyTimeoutSeconds';

export interface CarriedValue {
  value: number;
  /** `--check-delay=5s of \`contour envoy shutdown\` (container shutdown-manager, preStop)`, or the default's description. */
  from: string;
  /** What had to change for drainguard to carry it (rounded, clamped), empty when nothing did. */
  adjustments: string[];
  origin: 'sidecar-flag' | 'component-default';
  /**
   * A minimum drain the component counts from the start of its drain (Envoy Gateway), where
   * drainguard counts it from the failed health check, after the drain delay.
   */
  countsFromStart: boolean;
}

/** A flag that goes with the sidecar and whose loss changes nothing: `--explain` lists it. */
export interface DroppedFlag {
  container: string;
  flag: string;
  reason: string;
}

export interface SidecarDrainSettings {
  values: Partial<Record<CarriedSetting, CarriedValue>>;
  /** Conversions, conflicts and flags drainguard cannot keep: every one reported. */
  warnings: string[];
  /** Flags whose loss changes nothing. */
  dropped: DroppedFlag[];
}

type FlagMeaning =
  | { setting: CarriedSetting; kind: 'duration' | 'count' }
  /** Read by admin.ts. */
  | { admin: true }
  /** Its loss changes nothing: listed in `--explain`. */
  | { noEffect: string };

const NO_FILE_HANDSHAKE = "no file handshake any more: Envoy's own preStop drains Envoy";

/** What each flag of each upstream command means to drainguard (docs/upstream-shapes.md, sections 1-2). */
const FLAG_MEANINGS: Readonly<Record<UpstreamProgram, Readonly<Record<'shutdown' | 'shutdown-manager', Readonly<Record<string, FlagMeaning>>>>>> = {
  contour: {
    shutdown: {
      'drain-delay': { setting: 'drainDelaySeconds', kind: 'duration' },
      'check-delay': { setting: 'minDrainSeconds', kind: 'duration' },
      'check-interval': { setting: 'pollIntervalSeconds', kind: 'duration' },
      'min-open-connections': { setting: 'minConnections', kind: 'count' },
      'admin-address': { admin: true },
      'admin-port': { admin: true },
      'ready-file': { noEffect: NO_FILE_HANDSHAKE },
    },
    'shutdown-manager': {
      'serve-port': { noEffect: "the sidecar's HTTP server goes with the sidecar, and nothing calls it any more" },
      'ready-file': { noEffect: NO_FILE_HANDSHAKE },
      'admin-address': { admin: true },
    },
  },
  'envoy-gateway': {
    shutdown: {
      'drain-timeout': { setting: 'drainTimeoutSeconds', kind: 'duration' },
      'min-drain-duration': { setting: 'minDrainSeconds', kind: 'duration' },
      'exit-at-connections': { setting: 'minConnections', kind: 'count' },
      // The drain program's delay drains listeners at once (Envoy 1.28+) and fails health checks after it.
      'health-check-failure-delay': { setting: 'drainDelaySeconds', kind: 'duration' },
    },
    'shutdown-manager': {
      // Envoy's preStop gave up waiting for the sidecar after this long: it bounded the drain.
      'ready-timeout': { setting: 'readyTimeoutSeconds', kind: 'duration' },
    },
  },
};

const RANGES: Readonly<Record<CarriedSetting, Range>> = {
  ...DRAIN_SETTING_RANGES,
  drainTimeoutSeconds: { min: 1, max: MAX_DEADLINE_SECONDS },
  readyTimeoutSeconds: { min: 1, max: MAX_DEADLINE_SECONDS },
};

const NANOSECONDS_PER_SECOND = 1_000_000_000n;
/** Decimal only: Go's base-0 integer parsing would read `010` as 8 and `0x10` as 16. */
const DECIMAL = /^[+-]?(0|[1-9][0-9]{0,17})$/;

type Conversion = { value: number; adjustments: string[] } | { unreadable: string };

function clamp(value: number, setting: CarriedSetting, unit: string, adjustments: string[]): number {
  const { min, max } = RANGES[setting];
  if (value < min) {
    adjustments.push(`raised to ${min}${unit}, the least drainguard accepts`);
    return min;
  }
  if (value > max) {
    adjustments.push(`lowered to ${max}${unit}, the most drainguard accepts`);
    return max;
  }
  return value;
}

function convertDuration(text: string, setting: CarriedSetting): Conversion {
  const nanoseconds = parseGoDuration(text);
  if (nanoseconds === undefined) return { unreadable: 'not a Go duration' };
  const adjustments: string[] = [];
  let positive = nanoseconds;
  if (positive < 0n) {
    adjustments.push('negative, read as 0s as the sidecar does');
    positive = 0n;
  }
  // Whole seconds: the drain's timing is planned in seconds. Up, so a wait is never cut short.
  let seconds = positive / NANOSECONDS_PER_SECOND;
  if (positive % NANOSECONDS_PER_SECOND !== 0n) {
    seconds += 1n;
    adjustments.push(`rounded up to ${seconds}s`);
  }
  const capped = seconds > BigInt(MAX_DEADLINE_SECONDS) ? MAX_DEADLINE_SECONDS + 1 : Number(seconds);
  return { value: clamp(capped, setting, 's', adjustments), adjustments };
}

function convertCount(text: string, setting: CarriedSetting): Conversion {
  if (!DECIMAL.test(text)) return { unreadable: 'not a decimal whole number' };
  const adjustments: string[] = [];
  let count = Number(text);
  if (count < 0) {
    adjustments.push('negative (the sidecar would never finish early), read as 0');
    count = 0;
  }
  return { value: clamp(count, setting, '', adjustments), adjustments };
}

/**
 * Reads `commands` (the sidecar's preStop and command line, and Envoy's own replaced shutdown hook).
 * Only the flags of `replaced` commands are carried or reported: a disarmed sidecar keeps running its
 * command line, so those flags still apply there.
 */
export function readSidecarDrainSettings(commands: readonly UpstreamCommand[], replaced: (command: UpstreamCommand) => boolean): SidecarDrainSettings {
  const values: SidecarDrainSettings['values'] = {};
  const warnings: string[] = [];
  const unknown = new Set<string>();
  const noEffect = new Map<string, DroppedFlag>();

  for (const command of commands) {
    if (command.subcommand === 'bootstrap' || !replaced(command)) continue;
    const meanings = FLAG_MEANINGS[command.program][command.subcommand];
    for (const flag of command.flags) {
      const meaning = Object.hasOwn(meanings, flag.name) ? (meanings[flag.name] as FlagMeaning) : undefined;
      // Each flag once per container, even when the sidecar's command line and its preStop both carry it.
      if (meaning === undefined) unknown.add(`container ${command.containerName}: sidecar flag ${flag.text} dropped: not a flag drainguard knows, so it cannot keep what it did`);
      else if ('noEffect' in meaning) noEffect.set(`${command.containerName} ${flag.text}`, { container: command.containerName, flag: flag.text, reason: meaning.noEffect });
      else if ('setting' in meaning) carry(values, warnings, meaning, flag, describeCommand(command), command.program === 'envoy-gateway');
    }
  }
  // One warning per flag: a list in one warning would lose its end to the API server's 256-character cut.
  for (const warning of unknown) warnings.push(warning);
  return { values, warnings, dropped: [...noEffect.values()] };
}

function carry(
  values: SidecarDrainSettings['values'],
  warnings: string[],
  meaning: { setting: CarriedSetting; kind: 'duration' | 'count' },
  flag: UpstreamFlag,
  where: string,
  countsFromStart: boolean,
): void {
  const from = `${flag.text} of ${where}`;
  if (flag.value === undefined) {
    warnings.push(`${from}: no value; ignored`);
    return;
  }
  const conversion = meaning.kind === 'duration' ? convertDuration(flag.value, meaning.setting) : convertCount(flag.value, meaning.setting);
  if ('unreadable' in conversion) {
    warnings.push(`${from}: ${conversion.unreadable}; ignored`);
    return;
  }
  const earlier = values[meaning.setting];
  if (earlier !== undefined) {
    if (earlier.value !== conversion.value) warnings.push(`${from} disagrees with ${earlier.from}; the first is used`);
    return;
  }
  if (conversion.adjustments.length > 0) warnings.push(`${from}: ${conversion.adjustments.join(', ')}`);
  values[meaning.setting] = { value: conversion.value, from, adjustments: conversion.adjustments, origin: 'sidecar-flag', countsFromStart };
}
