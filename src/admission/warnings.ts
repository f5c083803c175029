/**
 * Kubernetes returns admission warnings to clients as HTTP `Warning` headers. The API server may
 * truncate a warning over 256 characters and ignores warnings once 4096 characters have been added
 * (from all webhooks together), and a header cannot carry control characters. Shaping the list here
 * means what the user sees is ours to choose, rather than an arbitrary cut.
 */
export const MAX_WARNING_CHARS = 256;
export const MAX_TOTAL_WARNING_CHARS = 4096;
/** Leaves room in the 4096 budget for warnings from other webhooks and the API server itself. */
const OUR_SHARE_OF_TOTAL = MAX_TOTAL_WARNING_CHARS / 2;
const ELLIPSIS = '...';

function oneLine(warning: string): string {
  // eslint-disable-next-line no-control-regex
  return warning.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}

function truncate(warning: string, max: number): string {
  return warning.length <= max ? warning : `${warning.slice(0, max - ELLIPSIS.length)}${ELLIPSIS}`;
}

/** Single-line, deduplicated, each ≤ 256 characters, all together within our share of the 4096 budget. */
export function shapeWarnings(warnings: readonly string[]): string[] {
  const unique = [...new Set(warnings.map(oneLine).filter((w) => w.length > 0))].map((w) =>
    truncate(w, MAX_WARNING_CHARS),
  );
  const kept: string[] = [];
  let used = 0;
  for (const [index, warning] of unique.entries()) {
    const remaining = unique.length - index;
    const omission = `drainguard: ${remaining} more warning(s) omitted; see the webhook log`;
    if (used + warning.length > OUR_SHARE_OF_TOTAL - omission.length) {
      kept.push(omission);
      break;
    }
    kept.push(warning);
    used += warning.length;
  }
  return kept;
}
