/**
 * RFC 6901 JSON Pointers. The only place that escapes a path segment: annotation keys such as
 * `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes` contain `/`, and `~` must be
 * escaped first so that `~1` in a key is not mistaken for an escaped `/`.
 */
export type PathSegment = string | number;

export function escapeSegment(segment: PathSegment): string {
  return String(segment).replace(/~/g, '~0').replace(/\//g, '~1');
}

export function toPointer(segments: readonly PathSegment[]): string {
  return segments.map((segment) => `/${escapeSegment(segment)}`).join('');
}
