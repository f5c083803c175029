/**
 * What each flag of an upstream shutdown command means to drainguard, read once (docs/upstream-shapes.md,
 * sections 1-2): a drain setting (its value converted the way the sidecar reads it, then brought into the
 * range drainguard accepts), the admin address (read in upstream-commands.ts), a flag whose loss changes
 * nothing, or one drainguard does not know.
 */
import { DRAIN_SETTING_RANGES, type Range } from '../../config/ranges';
import { MAX_DEADLINE_SECONDS } from '../../drain-contract';
import { parseGoDuration } from './go-duration';

export type UpstreamProgram = 'contour' | 'envoy-gateway';
export type ShutdownSubcommand = 'shutdown' | 'shutdown-manager';

/**
 * The drain settings a sidecar flag (or its component's default) can give. `drainTimeoutSeconds` (the
 * drain's own bound) and `readyTimeoutSeconds` (how long Envoy's preStop waits for the sidecar) both
 * bound the deadline.
 */
export type CarriedSetting = 'drainDelaySeconds' | 'minDrainSeconds' | 'pollIntervalSeconds' | 'minConnections' | 'drainTimeoutSeconds' | 'readyTimeoutSeconds';

/** One flag's meaning. */
export type FlagMeaning =
  /** A drain setting, read: its value, and what had to change for drainguard to carry it (rounded, clamped). */
  | { kind: 'setting'; setting: CarriedSetting; value: number; adjustments: string[] }
  /** A drain setting drainguard cannot read (`no value`, `not a Go duration`...): ignored, with a warning. */
  | { kind: 'unreadable-setting'; setting: CarriedSetting; problem: string }
  /** Read by upstream-commands.ts as the admin address. */
  | { kind: 'admin' }
  /** Its loss changes nothing: listed in `--explain`. */
  | { kind: 'no-effect'; reason: string }
  /** Not a flag drainguard knows, so it cannot keep what it did. */
  | { kind: 'unknown' };

type FlagRule = { setting: CarriedSetting; unit: 'duration' | 'count' } | { admin: true } | { noEffect: string };

const NO_FILE_HANDSHAKE = "no file handshake any more: Envoy's own preStop drains Envoy";

/** What each flag of each upstream command means to drainguard (docs/upstream-shapes.md, sections 1-2). */
const FLAG_RULES: Readonly<Record<UpstreamProgram, Readonly<Record<ShutdownSubcommand, Readonly<Record<string, FlagRule>>>>>> = {
  contour: {
    shutdown: {
      'drain-delay': { setting: 'drainDelaySeconds', unit: 'duration' },
      'check-delay': { setting: 'minDrainSeconds', unit: 'duration' },
      'check-interval': { setting: 'pollIntervalSeconds', unit: 'duration' },
      'min-open-connections': { setting: 'minConnections', unit: 'count' },
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
      'drain-timeout': { setting: 'drainTimeoutSeconds', unit: 'duration' },
      'min-drain-duration': { setting: 'minDrainSeconds', unit: 'duration' },
      'exit-at-connections': { setting: 'minConnections', unit: 'count' },
      // The drain program's delay drains listeners at once (Envoy 1.28+) and fails health checks after it.
      'health-check-failure-delay': { setting: 'drainDelaySeconds', unit: 'duration' },
    },
    'shutdown-manager': {
      // Envoy's preStop gave up waiting for the sidecar after this long: it bounded the drain.
      'ready-timeout': { setting: 'readyTimeoutSeconds', unit: 'duration' },
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

/** What flag `name` (given `value`, or none) of `program`'s `subcommand` means to drainguard. */
export function flagMeaning(program: UpstreamProgram, subcommand: ShutdownSubcommand, name: string, value: string | undefined): FlagMeaning {
  const rules = FLAG_RULES[program][subcommand];
  const rule = Object.hasOwn(rules, name) ? (rules[name] as FlagRule) : undefined;
  if (rule === undefined) return { kind: 'unknown' };
  if ('admin' in rule) return { kind: 'admin' };
  if ('noEffect' in rule) return { kind: 'no-effect', reason: rule.noEffect };
  const { setting } = rule;
  if (value === undefined) return { kind: 'unreadable-setting', setting, problem: 'no value' };
  const conversion = rule.unit === 'duration' ? convertDuration(value, setting) : convertCount(value, setting);
  if ('unreadable' in conversion) return { kind: 'unreadable-setting', setting, problem: conversion.unreadable };
  return { kind: 'setting', setting, value: conversion.value, adjustments: conversion.adjustments };
}
