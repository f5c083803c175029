/** The cluster autoscaler's annotation: which local volumes it may discard when it evicts the pod. */
import type { EnvoyPod } from '../facts';
import type { PlannedInstaller } from './installer';

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
export function safeToEvict(pod: EnvoyPod, planned: PlannedInstaller): string | undefined {
  const fallback = planned.fallback?.volumeName;
  const emptyDirs = fallback !== undefined && !pod.volumes.has(fallback) ? [...pod.emptyDirVolumes, fallback] : pod.emptyDirVolumes;
  if (emptyDirs.length === 0) return undefined;
  const merged = mergedVolumeList(pod.safeToEvictVolumes, emptyDirs);
  return merged === pod.safeToEvictVolumes ? undefined : merged;
}

