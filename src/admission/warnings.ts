/**
 * Kubernetes returns admission warnings to clients as HTTP `Warning` headers. The API server may
 * truncate a warning over 256 characters and ignores warnings once 4096 characters have been added
 * (from all webhooks together). It also drops, whole, any warning whose text holds a control character
 * in Go's sense (`unicode.IsControl`: U+0000–U+001F, U+007F and the C1 range U+0080–U+009F) or is not
 * valid UTF-8; user values quoted into our warnings may hold both. Shaping the list here means what
 * the user sees is ours to choose, rather than an arbitrary cut or a silent drop.
 */
export const MAX_WARNING_CHARS = 256;
export const MAX_TOTAL_WARNING_CHARS = 4096;
/** Leaves room in the 4096 budget for warnings from other webhooks and the API server itself. */
const OUR_SHARE_OF_TOTAL = MAX_TOTAL_WARNING_CHARS / 2;
const ELLIPSIS = '...';

/** Control characters (C0, DEL, C1) become spaces; a lone surrogate (not encodable as UTF-8) becomes U+FFFD. */
function oneLine(warning: string): string {
  return warning
    .replace(/\p{Cc}+/gu, ' ')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
    .trim();
}

/** Cut by code points, never inside a surrogate pair (half a pair would be an invalid character). */
function truncate(warning: string, max: number): string {
  const codePoints = [...warning];
  return codePoints.length <= max ? warning : `${codePoints.slice(0, max - ELLIPSIS.length).join('')}${ELLIPSIS}`;
}

/** Single-line, deduplicated, each ≤ 256 characters, all together within our share of the 4096 budget. */
export function shapeWarnings(warnings: readonly string[]): string[] {
  if (warnings.length === 0) return [];
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
