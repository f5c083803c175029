/** The cluster autoscaler's annotation: which local volumes it may discard when it evicts the pod. */
import type { EnvoyPod } from '../facts';
import type { PlannedInstaller } from './installer';

/** `existing` (a comma-separated list) with `names` added: each name once, in first-seen order. */
export function mergedVolumeList(existing: string | undefined, names: readonly string[]): string {
  // A Set keeps insertion order: linear however many names the annotation or the pod holds.
  const merged = new Set<string>();
  // The annotation's names, then the pod's, without spreading both into a third list.
  if (existing !== undefined) addTrimmed(merged, existing.split(','));
  addTrimmed(merged, names);
  return Array.from(merged).join(',');
}

function addTrimmed(merged: Set<string>, names: readonly string[]): void {
  for (const name of names) {
    const trimmed = name.trim();
    if (trimmed !== '') merged.add(trimmed);
  }
}

/** What the annotation becomes: a new list, gone (it listed only drainguard's replaced emptyDir), or unchanged (undefined). */
export type SafeToEvictChange = { set: string } | { remove: true } | undefined;

/**
 * The cluster autoscaler refuses to evict pods with local emptyDir storage unless told it is safe
 * (upstream issue #4322). An Envoy pod's emptyDirs are scratch (bootstrap, admin socket,
 * drainguard's own), so all of them are listed, merged with the names already there. An image volume
 * is no local storage: when drainguard's emptyDir becomes the image volume (the delivery mode changed),
 * its name leaves the list, and a list that held nothing else goes.
 */
export function safeToEvict(pod: EnvoyPod, planned: PlannedInstaller): SafeToEvictChange {
  const replaced = planned.ownEmptyDirReplaced;
  const ownEmptyDir = planned.own?.volume.emptyDir !== undefined ? planned.own.volume.name : undefined;
  let emptyDirs = replaced === undefined ? pod.emptyDirVolumes : pod.emptyDirVolumes.filter((name) => name !== replaced);
  if (ownEmptyDir !== undefined && !emptyDirs.includes(ownEmptyDir)) emptyDirs = [...emptyDirs, ownEmptyDir];
  const existing = replaced === undefined ? pod.safeToEvictVolumes : withoutName(pod.safeToEvictVolumes, replaced);
  const merged = mergedVolumeList(existing, emptyDirs);
  if (merged === '') return replaced !== undefined && pod.safeToEvictVolumes !== undefined && pod.safeToEvictVolumes.trim() !== '' ? { remove: true } : undefined;
  return merged === pod.safeToEvictVolumes ? undefined : { set: merged };
}

function withoutName(list: string | undefined, name: string): string | undefined {
  return list === undefined ? undefined : list.split(',').filter((entry) => entry.trim() !== name).join(',');
}
