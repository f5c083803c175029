/**
 * Step 6: the status annotation records what drainguard did; a pod carrying the current version's
 * status is returned unchanged (the webhook may see a pod twice with reinvocationPolicy IfNeeded).
 */
import { VERSION } from '../../version';
import { Annotations } from '../annotations';
import type { Pod } from '../k8s';
import type { PatchBuilder } from '../patch-builder';
import type { MutationAction } from '../result';

export interface StatusRecord {
  version: string;
  actions: MutationAction[];
}

export function readStatus(pod: Pod): StatusRecord | undefined {
  const text = pod.metadata?.annotations?.[Annotations.status];
  if (typeof text !== 'string') return undefined;
  try {
    const parsed = JSON.parse(text) as Partial<StatusRecord>;
    if (typeof parsed.version !== 'string' || !Array.isArray(parsed.actions)) return undefined;
    return { version: parsed.version, actions: parsed.actions };
  } catch {
    return undefined;
  }
}

export function hasCurrentStatus(pod: Pod): boolean {
  return readStatus(pod)?.version === VERSION;
}

/** Compact JSON, keys in a fixed order: byte-identical output for identical actions. */
export function statusValue(actions: readonly MutationAction[]): string {
  const record: StatusRecord = { version: VERSION, actions: [...actions] };
  return JSON.stringify(record);
}

export function applyStatus(builder: PatchBuilder, actions: readonly MutationAction[]): void {
  builder.set(['metadata', 'annotations', Annotations.status], statusValue(actions));
}
