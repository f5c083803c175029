/**
 * Step 7: the cluster autoscaler refuses to evict pods with local emptyDir storage unless told it is
 * safe (upstream issue #4322). An Envoy pod's emptyDirs are scratch (bootstrap, admin socket,
 * drainguard's own): list them, merged with names already there, order kept, no duplicates.
 */
import { SAFE_TO_EVICT_LOCAL_VOLUMES } from '../annotations';
import type { MutationContext } from './context';

export function mergedVolumeList(existing: string | undefined, names: readonly string[]): string {
  // A Set keeps insertion order: linear however many names the annotation or the pod holds.
  const merged = new Set<string>();
  for (const name of [...(existing ?? '').split(','), ...names]) {
    const trimmed = name.trim();
    if (trimmed !== '') merged.add(trimmed);
  }
  return [...merged].join(',');
}

export function applySafeToEvict(context: MutationContext): void {
  const { builder } = context;
  const emptyDirs = (builder.draft.spec.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name);
  if (emptyDirs.length === 0) return;
  const existing = builder.draft.metadata?.annotations?.[SAFE_TO_EVICT_LOCAL_VOLUMES];
  const merged = mergedVolumeList(existing, emptyDirs);
  if (merged === existing) return;
  builder.set(['metadata', 'annotations', SAFE_TO_EVICT_LOCAL_VOLUMES], merged);
}
