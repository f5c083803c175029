/**
 * The pod's effective grace period, and the drain's settings derived from it and from what the pod
 * says. The kubelet kills Envoy when the grace period ends whatever the hook is doing, so the drain
 * must finish a margin earlier, and the drain delay plus the minimum drain must fit inside that
 * deadline.
 *
 * Each setting comes from the first of: its `drainguard.io/*` annotation, drainguard's own hook from an
 * earlier run (so a re-invocation, or `inject` run twice, writes the same hook after the sidecar is
 * gone), the shutdown-manager's flag, the operator's configuration when it sets the setting, that
 * component's default at its release, drainguard's own default. Every value records where it came
 * from and what was changed to fit (docs/configuration.md, "Where a drain setting comes from";
 * docs/pod-changes.md, "Drain settings").
 */
import { DRAIN_SETTING_DEFAULTS } from '../../config/defaults';
import type { Config, DrainConfig } from '../../config/types';
import { MAX_DEADLINE_SECONDS, type DrainArguments } from '../../drain-contract';
import type { CarriedSetting, CarriedValue } from '../facts';
import { Annotations, type Overrides } from '../parse';

/** What Kubernetes uses when terminationGracePeriodSeconds is unset. */
export const KUBERNETES_DEFAULT_GRACE_SECONDS = 30;

export interface GracePeriod {
  effectiveSeconds: number;
  source: 'pod' | 'kubernetes-default' | 'floor';
  /** The opt-in floor applies: terminationGracePeriodSeconds must be raised to effectiveSeconds. */
  raise: boolean;
}

/** The grace period from the pod's terminationGracePeriodSeconds (`declared`), raised to the opt-in floor. */
export function gracePeriod(declared: number | undefined, config: Config): GracePeriod {
  const current = declared ?? KUBERNETES_DEFAULT_GRACE_SECONDS;
  const source = declared !== undefined ? 'pod' : 'kubernetes-default';
  const floor = config.gracePeriodFloor;
  if (floor.enabled && current < floor.minimumSeconds) {
    return { effectiveSeconds: floor.minimumSeconds, source: 'floor', raise: true };
  }
  return { effectiveSeconds: current, source, raise: false };
}

/** Below this, a drain cannot achieve anything useful; the grace period is too short. */
export const MIN_DEADLINE_SECONDS = 5;

/**
 * Where a drain value came from. `configuration` is a setting the operator set; `drainguard-default`
 * one nobody set, drainguard's own default.
 */
export type DrainValueOrigin = 'annotation' | 'drainguard-hook' | 'sidecar-flag' | 'configuration' | 'component-default' | 'drainguard-default' | 'grace-period';

export interface DrainValueSource {
  origin: DrainValueOrigin;
  /** In words, with what was changed to fit: `--check-delay=5s of ...; shortened to fit the 20s deadline`. */
  detail: string;
}

export type DrainSetting = 'deadline' | 'drainDelay' | 'minDrain' | 'minConnections' | 'pollInterval';

export interface DrainTiming {
  deadlineSeconds: number;
  drainDelaySeconds: number;
  minDrainSeconds: number;
  minConnections: number;
  pollIntervalSeconds: number;
  sources: Record<DrainSetting, DrainValueSource>;
  warnings: string[];
}

/** What the pod says about the drain, besides its grace period. */
export interface DrainInputs {
  overrides: Overrides;
  /** drainguard's own hook from an earlier run. */
  previous: DrainArguments | undefined;
  /** Settings carried over from the replaced component: its flags, else its defaults at its release. */
  sidecar: Partial<Record<CarriedSetting, CarriedValue>>;
}

interface Picked {
  value: number;
  source: DrainValueSource;
}

const PREVIOUS_HOOK = "drainguard's own preStop from an earlier run";

interface Previous {
  value: number;
  detail: string;
}

/** Whole seconds from the hook's milliseconds; a hand-edited sub-second value is rounded up, and said so. */
function previousSeconds(ms: number | undefined, what: string, warnings: string[]): Previous | undefined {
  if (ms === undefined) return undefined;
  const value = Math.ceil(ms / 1000);
  if (ms % 1000 === 0) return { value, detail: PREVIOUS_HOOK };
  warnings.push(`the ${what} of ${PREVIOUS_HOOK} is ${ms}ms: rounded up to ${value}s`);
  return { value, detail: `${PREVIOUS_HOOK}, rounded up from ${ms}ms` };
}

function withAdjustments(detail: string, adjustments: readonly string[]): string {
  return adjustments.length === 0 ? detail : `${detail}; ${adjustments.join(', ')}`;
}

/** A drain setting of the configuration: the operator's value when set, drainguard's default otherwise. */
interface Configured {
  key: keyof DrainConfig;
  value: number;
  set: boolean;
}

/** `key` of `config.drain`, and whether the operator set it. */
function configured(config: Config, key: keyof DrainConfig): Configured {
  const value = config.drain[key];
  return value === undefined ? { key, value: DRAIN_SETTING_DEFAULTS[key], set: false } : { key, value, set: true };
}

function fromConfiguration(setting: Configured): Picked {
  return setting.set
    ? { value: setting.value, source: { origin: 'configuration', detail: `drain.${setting.key} set in drainguard's configuration` } }
    : { value: setting.value, source: { origin: 'drainguard-default', detail: `drainguard's configuration (drain.${setting.key})` } };
}

/**
 * The first that gives a setting of: its annotation, the previous hook, the sidecar's flag, the
 * configuration when the operator set it, the component's default, drainguard's default.
 */
function pick(
  annotation: { key: string; value: number | undefined } | undefined,
  previous: Previous | undefined,
  sidecar: CarriedValue | undefined,
  setting: Configured,
): Picked {
  if (annotation?.value !== undefined) return { value: annotation.value, source: { origin: 'annotation', detail: `the ${annotation.key} annotation` } };
  if (previous !== undefined) return { value: previous.value, source: { origin: 'drainguard-hook', detail: previous.detail } };
  if (sidecar?.origin === 'sidecar-flag') return carried(sidecar);
  if (setting.set || sidecar === undefined) return fromConfiguration(setting);
  return carried(sidecar);
}

function carried(value: CarriedValue): Picked {
  return { value: value.value, source: { origin: value.origin, detail: withAdjustments(value.from, value.adjustments) } };
}

/**
 * The deadline from the grace period, then bounded by an earlier hook's, or by the replaced component's
 * drain timeout and the time Envoy's preStop waited for it (flags or defaults).
 */
function deadline(graceSeconds: number, inputs: DrainInputs, config: Config, warnings: string[]): Picked {
  const { value: margin, set } = configured(config, 'deadlineMarginSeconds');
  let value = graceSeconds - margin;
  let detail = `grace period - ${margin}s (drain.deadlineMarginSeconds${set ? " set in drainguard's configuration" : ''})`;
  if (value > MAX_DEADLINE_SECONDS) {
    value = MAX_DEADLINE_SECONDS;
    detail = `capped at ${MAX_DEADLINE_SECONDS}s, the longest the drain program accepts`;
    warnings.push(`terminationGracePeriodSeconds ${graceSeconds}: the drain deadline is ${detail}`);
  } else if (value < MIN_DEADLINE_SECONDS) {
    // Never a zero or negative deadline; within the grace period when at all possible.
    value = Math.max(1, Math.min(graceSeconds, MIN_DEADLINE_SECONDS));
    detail = `${value}s: the grace period leaves no room after the ${margin}s margin`;
    warnings.push(
      `terminationGracePeriodSeconds ${graceSeconds} leaves no room for a drain after the ${margin}s margin: ` +
        `the drain deadline is ${value}s; raise the grace period (or enable gracePeriodFloor)`,
    );
  }
  const fromGrace: Picked = { value, source: { origin: 'grace-period', detail } };

  // A bound, never a way to outlast the grace period.
  const previous = previousSeconds(inputs.previous?.deadlineMs, 'deadline', warnings);
  if (previous !== undefined) {
    return previous.value < value ? { value: previous.value, source: { origin: 'drainguard-hook', detail: `${previous.detail}, shorter than ${detail}` } } : fromGrace;
  }
  const { drainTimeoutSeconds, readyTimeoutSeconds } = inputs.sidecar;
  // Most pods carry neither bound: no lists are made for them.
  if (drainTimeoutSeconds === undefined && readyTimeoutSeconds === undefined) return fromGrace;
  const bounds = [drainTimeoutSeconds, readyTimeoutSeconds].filter((bound): bound is CarriedValue => bound !== undefined);
  const tightest = bounds.reduce<CarriedValue | undefined>((best, bound) => (best === undefined || bound.value < best.value ? bound : best), undefined);
  if (tightest !== undefined && tightest.value < value) {
    return { value: tightest.value, source: { origin: tightest.origin, detail: withAdjustments(`${tightest.from}, shorter than ${detail}`, tightest.adjustments) } };
  }
  // A flag the user set that does not bound the drain is worth saying; a default that does not is not.
  const notShorter = bounds.filter((bound) => bound.origin === 'sidecar-flag').map((bound) => bound.from);
  if (notShorter.length === 0) return fromGrace;
  return { value, source: { origin: 'grace-period', detail: `${detail}; ${notShorter.join(' and ')} ${notShorter.length === 1 ? 'is' : 'are'} not shorter` } };
}

export function drainTiming(graceSeconds: number, inputs: DrainInputs, config: Config): DrainTiming {
  const warnings: string[] = [];
  const { overrides, previous, sidecar } = inputs;
  const deadlinePick = deadline(graceSeconds, inputs, config, warnings);
  const deadlineSeconds = deadlinePick.value;

  const drainDelay = pick(
    { key: Annotations.drainDelay, value: overrides.drainDelaySeconds },
    previousSeconds(previous?.drainDelayMs, 'drain delay', warnings),
    sidecar.drainDelaySeconds,
    configured(config, 'drainDelaySeconds'),
  );
  const minDrain = pick(
    { key: Annotations.minDrain, value: overrides.minDrainSeconds },
    previousSeconds(previous?.minDrainMs, 'minimum drain', warnings),
    sidecar.minDrainSeconds,
    configured(config, 'minDrainSeconds'),
  );
  const carriedMinDrain = sidecar.minDrainSeconds;
  const minDrainIsCarried = minDrain.source.origin === 'sidecar-flag' || minDrain.source.origin === 'component-default';
  if (minDrainIsCarried && carriedMinDrain?.countsFromStart === true && drainDelay.value > 0) {
    // Envoy Gateway counts its minimum from the start of its drain, which its health check failure
    // delay is part of; drainguard counts it from the failed health check, after the delay.
    const shortened = Math.max(0, minDrain.value - drainDelay.value);
    minDrain.source.detail += `; less the ${drainDelay.value}s drain delay, which Envoy Gateway counts in it (drainguard counts from the failed health check)`;
    minDrain.value = shortened;
  }
  if (drainDelay.value + minDrain.value > deadlineSeconds) {
    const wanted = `drain delay ${drainDelay.value}s + minimum drain ${minDrain.value}s`;
    // Load balancer deregistration (the delay) matters more than a minimum drain time.
    const shortened = `shortened to fit the ${deadlineSeconds}s deadline`;
    const delay = Math.min(drainDelay.value, deadlineSeconds);
    const min = Math.max(0, Math.min(minDrain.value, deadlineSeconds - delay));
    if (delay !== drainDelay.value) drainDelay.source.detail += `; ${shortened}`;
    if (min !== minDrain.value) minDrain.source.detail += `; ${shortened}`;
    drainDelay.value = delay;
    minDrain.value = min;
    warnings.push(`${wanted} do not fit in the ${deadlineSeconds}s drain deadline: shortened to drain delay ${delay}s and minimum drain ${min}s`);
  }
  const minConnections = pick(
    { key: Annotations.minConnections, value: overrides.minConnections },
    previous === undefined ? undefined : { value: previous.minConnections, detail: PREVIOUS_HOOK },
    sidecar.minConnections,
    configured(config, 'minConnections'),
  );
  // No annotation sets the poll interval.
  const pollInterval = pick(
    undefined,
    previousSeconds(previous?.pollIntervalMs, 'poll interval', warnings),
    sidecar.pollIntervalSeconds,
    configured(config, 'pollIntervalSeconds'),
  );

  return {
    deadlineSeconds,
    drainDelaySeconds: drainDelay.value,
    minDrainSeconds: minDrain.value,
    minConnections: minConnections.value,
    pollIntervalSeconds: pollInterval.value,
    sources: {
      deadline: deadlinePick.source,
      drainDelay: drainDelay.source,
      minDrain: minDrain.source,
      minConnections: minConnections.source,
      pollInterval: pollInterval.source,
    },
    warnings,
  };
}
