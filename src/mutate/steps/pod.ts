/**
 * Pod-level changes: the cluster autoscaler's annotation, the opt-in grace period floor, and the
 * status annotation that records what drainguard did.
 */
import { VERSION } from '../../version';
import type { PatchBuilder } from '../patch/builder';
import { Annotations, PROTECTED_LABEL, PROTECTED_LABEL_VALUE, SAFE_TO_EVICT_LOCAL_VOLUMES } from '../parse';
import type { MutationAction, StepContext } from './context';

/** `existing` (a comma-separated list) with `names` added: each name once, in first-seen order. */
export function mergedVolumeList(existing: string | undefined, names: readonly string[]): string {
  // A Set keeps insertion order: linear however many names the annotation or the pod holds.
  const merged = new Set<string>();
  for (const name of [...(existing ?? '').split(','), ...names]) {
    const trimmed = name.trim();
    if (trimmed !== '') merged.add(trimmed);
  }
  return [...merged].join(',');
}

/**
 * The cluster autoscaler refuses to evict pods with local emptyDir storage unless told it is safe
 * (upstream issue #4322). An Envoy pod's emptyDirs are scratch (bootstrap, admin socket,
 * drainguard's own), so all of them are listed, merged with the names already there.
 */
export function applySafeToEvict(context: StepContext): void {
  const { builder } = context;
  const emptyDirs = (builder.draft.spec.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name);
  if (emptyDirs.length === 0) return;
  const existing = builder.draft.metadata?.annotations?.[SAFE_TO_EVICT_LOCAL_VOLUMES];
  const merged = mergedVolumeList(existing, emptyDirs);
  if (merged === existing) return;
  builder.set(['metadata', 'annotations', SAFE_TO_EVICT_LOCAL_VOLUMES], merged);
}

/**
 * `drainguard.io/protected: "true"` on a pod that has drainguard's drain, so that `drainguard report`
 * watches it; none on a pod that has not (a preStop drainguard keeps, nowhere to install): the label
 * would make the reporter count each of its terminations as a drain that never reported. Already
 * right (a re-invocation, a template that carries it): no operation.
 */
export function applyProtectedLabel(context: StepContext): void {
  const { builder } = context;
  const current = builder.draft.metadata?.labels?.[PROTECTED_LABEL];
  if (context.drain !== undefined) {
    if (current !== PROTECTED_LABEL_VALUE) builder.set(['metadata', 'labels', PROTECTED_LABEL], PROTECTED_LABEL_VALUE);
    return;
  }
  removeProtectedLabel(builder, context.warn);
}

/**
 * The one change made to a pod drainguard leaves whole (mutate, "no half protection"): a protected
 * label it carries goes, since nothing there drains.
 */
export function removeProtectedLabel(builder: PatchBuilder, warn: (message: string) => void): void {
  if (builder.draft.metadata?.labels?.[PROTECTED_LABEL] === undefined) return;
  builder.remove(['metadata', 'labels', PROTECTED_LABEL]);
  warn(`label ${PROTECTED_LABEL} removed: the drain was not installed, so this pod is not protected`);
}

/** Opt-in: raise terminationGracePeriodSeconds to the configured floor so a drain has room. */
export function applyGracePeriodFloor(context: StepContext): void {
  if (!context.grace.raise) return;
  context.builder.set(['spec', 'terminationGracePeriodSeconds'], context.grace.effectiveSeconds);
}

/** Compact JSON, keys in a fixed order: byte-identical output for identical actions. */
export function statusValue(actions: readonly MutationAction[]): string {
  return JSON.stringify({ version: VERSION, actions: [...actions] });
}

/** Writes the status unless it already says exactly this; true when it wrote it. */
export function applyStatus(builder: PatchBuilder, actions: readonly MutationAction[]): boolean {
  const value = statusValue(actions);
  if (builder.draft.metadata?.annotations?.[Annotations.status] === value) return false;
  builder.set(['metadata', 'annotations', Annotations.status], value);
  return true;
}
