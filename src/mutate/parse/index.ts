/**
 * Stage 1, parse: the pod as drainguard accepts it, before anything reads it for facts.
 *
 * A pod opted out is left alone however it is written. A pod whose fields drainguard reads have the
 * wrong JSON type is invalid (src/k8s/shape.ts). The drainguard.io annotations are read strictly; an
 * invalid one is kept as a problem, for the plan to deny the pod with once it knows whether drainguard
 * acts on it at all. The status annotation says what an earlier pass did.
 */
import type { Pod } from '../../k8s';
import { podShapeProblems } from '../../k8s/shape';
import { Annotations, readOverrides, type OverridesReading } from './annotations';
import { readStatus, type StatusRecord } from './status';

export {
  ANNOTATION_PREFIX,
  Annotations,
  invalidAnnotationMessage,
  KNOWN_ANNOTATIONS,
  MAX_DURATION_SECONDS,
  PROTECTED_LABEL,
  PROTECTED_LABEL_VALUE,
  quoteValue,
  readOverrides,
  SAFE_TO_EVICT_LOCAL_VOLUMES,
  type Overrides,
  type OverridesReading,
} from './annotations';
export { readStatus, type StatusRecord } from './status';

export type ParsedPod =
  | { kind: 'opted-out' }
  | { kind: 'invalid'; problems: string[] }
  | { kind: 'parsed'; pod: Pod; annotations: OverridesReading; status: StatusRecord | undefined };

function isOptedOut(pod: Pod): boolean {
  const annotations: unknown = (pod as { metadata?: { annotations?: unknown } } | null)?.metadata?.annotations;
  return typeof annotations === 'object' && annotations !== null && (annotations as Record<string, unknown>)[Annotations.inject] === 'disabled';
}

export function parsePod(pod: Pod): ParsedPod {
  if (isOptedOut(pod)) return { kind: 'opted-out' };
  const problems = podShapeProblems(pod);
  if (problems.length > 0) return { kind: 'invalid', problems };
  return { kind: 'parsed', pod, annotations: readOverrides(pod.metadata?.annotations ?? {}), status: readStatus(pod) };
}
