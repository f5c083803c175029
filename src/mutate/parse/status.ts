/**
 * drainguard's status annotation as the plan reads it: which drainguard version rewrote the pod, and
 * what it did. A re-invocation restores what a later webhook undid (docs/design.md, "The status
 * annotation and re-invocation").
 */
import type { Pod } from '../../k8s';
import { Annotations } from './annotations';

export interface StatusRecord {
  version: string;
  /** The steps' actions (`prestop`, `installer`, ...), as written; unknown ones are kept here and dropped on rewrite. */
  actions: string[];
}

export function readStatus(pod: Pod): StatusRecord | undefined {
  const text = pod.metadata?.annotations?.[Annotations.status];
  if (typeof text !== 'string') return undefined;
  try {
    const parsed = JSON.parse(text) as { version?: unknown; actions?: unknown };
    if (typeof parsed.version !== 'string' || !Array.isArray(parsed.actions)) return undefined;
    return { version: parsed.version, actions: parsed.actions.filter((action): action is string => typeof action === 'string') };
  } catch {
    return undefined;
  }
}
