/**
 * RFC 6901 JSON Pointers. The only place that escapes a path segment: annotation keys such as
 * `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes` contain `/`, and `~` must be
 * escaped first so that `~1` in a key is not mistaken for an escaped `/`.
 */
export type PathSegment = string | number;

export function escapeSegment(segment: PathSegment): string {
  const text = String(segment);
  // Almost every segment (field names, indices) has neither character: skip the two replace passes.
  if (!text.includes('~') && !text.includes('/')) return text;
  return text.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function toPointer(segments: readonly PathSegment[]): string {
  let pointer = '';
  for (const segment of segments) pointer += `/${escapeSegment(segment)}`;
  return pointer;
}
