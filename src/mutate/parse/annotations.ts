/**
 * Every annotation drainguard reads or writes, and the per-pod overrides read from them.
 *
 * Overrides (`drainguard.io/<name>`) are validated strictly: several become exec arguments of
 * Envoy's preStop hook. An invalid value denies the pod with a message naming the annotation, the
 * value and the accepted form, so the workload's events explain the rejection.
 */
import { DRAIN_SETTING_RANGES } from '../../config/ranges';
import type { SidecarMode } from '../../config/types';
import { ADMIN_ADDRESS_FORM, formatDuration, MAX_MIN_CONNECTIONS, parseDuration, readAdminAddress } from '../../drain-contract';
import { compareExact, parseQuantity } from '../../k8s/quantity';
import { isDnsLabel } from '../../k8s/validate';

export const ANNOTATION_PREFIX = 'drainguard.io/';

export const Annotations = {
  /** `enabled` | `disabled`: per-pod opt-out inside an opted-in namespace. */
  inject: 'drainguard.io/inject',
  /** Written by drainguard: `{"version":…,"actions":[…]}`. */
  status: 'drainguard.io/status',
  envoyContainer: 'drainguard.io/envoy-container',
  envoyCpuRequest: 'drainguard.io/envoy-cpu-request',
  envoyMemoryRequest: 'drainguard.io/envoy-memory-request',
  drainDelay: 'drainguard.io/drain-delay',
  minDrain: 'drainguard.io/min-drain',
  minConnections: 'drainguard.io/min-connections',
  adminAddress: 'drainguard.io/admin-address',
  sidecarMode: 'drainguard.io/sidecar-mode',
} as const;

export const KNOWN_ANNOTATIONS: ReadonlySet<string> = new Set(Object.values(Annotations));

/**
 * The label on every pod whose drain drainguard installed, and only those: `drainguard report` watches
 * pods with this label selector (docs/pod-changes.md). drainguard owns it: a pod it cannot protect
 * loses it.
 */
export const PROTECTED_LABEL = 'drainguard.io/protected';
export const PROTECTED_LABEL_VALUE = 'true';

/** The cluster autoscaler's list of local volumes it may discard when evicting the pod. */
export const SAFE_TO_EVICT_LOCAL_VOLUMES = 'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes';

export interface Overrides {
  envoyCpuRequest?: string;
  envoyMemoryRequest?: string;
  drainDelaySeconds?: number;
  minDrainSeconds?: number;
  minConnections?: number;
  adminAddress?: string;
  sidecarMode?: SidecarMode;
  envoyContainer?: string;
}

/** Every override read; `problems` names each invalid annotation (any problem denies the pod). */
export interface OverridesReading {
  overrides: Overrides;
  problems: string[];
  warnings: string[];
}

/** Longest drain delay or minimum drain an annotation may ask for: what the configuration accepts. */
export const MAX_DURATION_SECONDS = Math.min(DRAIN_SETTING_RANGES.drainDelaySeconds.max, DRAIN_SETTING_RANGES.minDrainSeconds.max);
const MAX_QUANTITY_LENGTH = 32;

const DURATION_FORM = `whole seconds with an "s" suffix, 0s to ${MAX_DURATION_SECONDS}s (e.g. "5s")`;
const COUNT_FORM = `a non-negative whole number up to ${MAX_MIN_CONNECTIONS} (e.g. "0")`;
const QUANTITY_FORM = 'a positive Kubernetes quantity (e.g. "100m", "0.5", "128Mi", "1G")';
const SIDECAR_MODE_FORM = '"remove" or "disarm"';
const CONTAINER_NAME_FORM = 'the name of one of the pod\'s containers (a DNS label)';
const INJECT_FORM = '"enabled" or "disabled"';

const COUNT = /^(0|[1-9][0-9]{0,6})$/;

/** Shows a user value in a message: quoted, escaped, and short. */
export function quoteValue(value: string): string {
  const shown = value.length > 64 ? `${value.slice(0, 61)}...` : value;
  return JSON.stringify(shown);
}

export function invalidAnnotationMessage(key: string, value: string, form: string): string {
  return `annotation ${key}: invalid value ${quoteValue(value)}; expected ${form}`;
}

/** Whole seconds written as the drain program reads them back (`5s`, not `5000ms`). */
function parseSeconds(value: string): number | undefined {
  const ms = parseDuration(value);
  if (ms === undefined || ms % 1000 !== 0 || formatDuration(ms) !== value) return undefined;
  return ms / 1000 <= MAX_DURATION_SECONDS ? ms / 1000 : undefined;
}

function parseCount(value: string): number | undefined {
  if (!COUNT.test(value)) return undefined;
  const count = Number(value);
  return count <= MAX_MIN_CONNECTIONS ? count : undefined;
}

function parsePositiveQuantity(value: string): string | undefined {
  if (value.length > MAX_QUANTITY_LENGTH) return undefined;
  const parsed = parseQuantity(value);
  if (parsed === undefined || compareExact(parsed, { numerator: 0n, denominator: 1n }) <= 0) return undefined;
  return value;
}

function parseSidecarMode(value: string): SidecarMode | undefined {
  return value === 'remove' || value === 'disarm' ? value : undefined;
}

function parseContainerName(value: string): string | undefined {
  return isDnsLabel(value) ? value : undefined;
}

interface OverrideRule<K extends keyof Overrides> {
  key: string;
  field: K;
  form: string;
  parse: (value: string) => Overrides[K] | undefined;
}

const RULES: OverrideRule<keyof Overrides>[] = [
  { key: Annotations.envoyCpuRequest, field: 'envoyCpuRequest', form: QUANTITY_FORM, parse: parsePositiveQuantity },
  { key: Annotations.envoyMemoryRequest, field: 'envoyMemoryRequest', form: QUANTITY_FORM, parse: parsePositiveQuantity },
  { key: Annotations.drainDelay, field: 'drainDelaySeconds', form: DURATION_FORM, parse: parseSeconds },
  { key: Annotations.minDrain, field: 'minDrainSeconds', form: DURATION_FORM, parse: parseSeconds },
  { key: Annotations.minConnections, field: 'minConnections', form: COUNT_FORM, parse: parseCount },
  {
    key: Annotations.adminAddress,
    field: 'adminAddress',
    form: ADMIN_ADDRESS_FORM,
    parse: (value) => (readAdminAddress(value).ok ? value : undefined),
  },
  { key: Annotations.sidecarMode, field: 'sidecarMode', form: SIDECAR_MODE_FORM, parse: parseSidecarMode },
  { key: Annotations.envoyContainer, field: 'envoyContainer', form: CONTAINER_NAME_FORM, parse: parseContainerName },
];

const SETTABLE_ANNOTATIONS = [...KNOWN_ANNOTATIONS].filter((key) => key !== Annotations.status).join(', ');

/**
 * Reads every drainguard annotation: `drainguard.io/inject` and the overrides. An invalid one is a
 * problem; the caller denies the pod naming all of them, so one bad value never hides another.
 */
export function readOverrides(annotations: Record<string, string> | undefined): OverridesReading {
  const overrides: Overrides = {};
  const problems: string[] = [];
  const warnings: string[] = [];
  const all = annotations ?? {};

  const inject = all[Annotations.inject];
  if (inject !== undefined && inject !== 'enabled') problems.push(invalidAnnotationMessage(Annotations.inject, String(inject), INJECT_FORM));
  for (const rule of RULES) {
    const value = all[rule.key];
    if (value === undefined) continue;
    const parsed = typeof value === 'string' ? rule.parse(value) : undefined;
    if (parsed === undefined) problems.push(invalidAnnotationMessage(rule.key, String(value), rule.form));
    else (overrides as Record<string, unknown>)[rule.field] = parsed;
  }

  for (const key of Object.keys(all)) {
    if (key.startsWith(ANNOTATION_PREFIX) && !KNOWN_ANNOTATIONS.has(key)) warnings.push(`unknown annotation ${key} ignored (known: ${SETTABLE_ANNOTATIONS})`);
  }

  return { overrides, problems, warnings };
}
