import { diffLines, FILE_HEADERS_ONLY, formatPatch, type StructuredPatchHunk } from 'diff';

/**
 * A unified diff (the `diff -u` / `git diff` format) for `drainguard inject --diff`. Lines are matched
 * by jsdiff (the `diff` package) one YAML document at a time, and jsdiff formats the patch; what is
 * ours is only the grouping into hunks across documents, because jsdiff makes hunks of one text pair.
 */

const CONTEXT_LINES = 3;

/**
 * jsdiff's Myers search costs about (N+M)·D steps for D edits; past this many it stops, and the
 * document is shown as removed and re-added: a correct if not minimal diff, in bounded time.
 */
const MAX_DIFF_WORK = 16 * 1024 * 1024;

type EditKind = ' ' | '-' | '+';

interface Edit {
  kind: EditKind;
  /** The line including its terminator ('\n'), or without one for a last line that has none. */
  line: string;
}

/** One piece of a text and what it became, e.g. one YAML document. */
export interface ChangedPart {
  before: string;
  after: string;
}

/** The two sides' names in the `---`/`+++` lines: the file, and a tab-separated header such as `injected`. */
export interface DiffLabels {
  file: string;
  oldHeader: string;
  newHeader: string;
}

/** Empty string when the texts are equal. */
export function unifiedDiff(oldText: string, newText: string, labels: DiffLabels): string {
  return unifiedDiffOfParts([{ before: oldText, after: newText }], labels);
}

/**
 * The diff of the concatenated `before`s against the concatenated `after`s, matching lines only within
 * each part. For a YAML stream diffed document by document that is both what a reader expects and much
 * cheaper than matching across a whole file with hundreds of changed workloads.
 */
export function unifiedDiffOfParts(parts: readonly ChangedPart[], labels: DiffLabels): string {
  const edits = alignToLines(parts).flatMap(editsOf);
  const hunks = groupIntoHunks(edits);
  if (hunks.length === 0) return '';
  return formatPatch(
    { oldFileName: labels.file, newFileName: labels.file, oldHeader: labels.oldHeader, newHeader: labels.newHeader, hunks },
    FILE_HEADERS_ONLY,
  );
}

/** Merges a part that ends mid-line with the next one, so that every part is made of whole lines. */
function alignToLines(parts: readonly ChangedPart[]): ChangedPart[] {
  const aligned: ChangedPart[] = [];
  let pending: ChangedPart | null = null;
  for (const part of parts) {
    const current: ChangedPart = pending ? { before: pending.before + part.before, after: pending.after + part.after } : part;
    const endsMidLine = (text: string) => text !== '' && !text.endsWith('\n');
    if (endsMidLine(current.before) || endsMidLine(current.after)) pending = current;
    else {
      aligned.push(current);
      pending = null;
    }
  }
  if (pending) aligned.push(pending);
  return aligned;
}

/** Lines keep their '\n' so that a missing final newline counts as a difference, as in diff(1). */
function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function editsOf({ before, after }: ChangedPart): Edit[] {
  const oldLines = splitLines(before);
  if (before === after) return oldLines.map((line) => ({ kind: ' ', line }));
  const newLines = splitLines(after);
  const maxEditLength = Math.max(1, Math.floor(MAX_DIFF_WORK / (oldLines.length + newLines.length)));
  const changes = diffLines(before, after, { maxEditLength });
  if (changes === undefined) {
    return [...oldLines.map((line): Edit => ({ kind: '-', line })), ...newLines.map((line): Edit => ({ kind: '+', line }))];
  }
  return changes.flatMap((change) => {
    const kind: EditKind = change.added ? '+' : change.removed ? '-' : ' ';
    return splitLines(change.value).map((line) => ({ kind, line }));
  });
}

/** diff(1)'s hunks: changes whose context windows touch (a gap of up to 2×CONTEXT equal lines) share one. */
function groupIntoHunks(edits: readonly Edit[]): StructuredPatchHunk[] {
  const ranges: [number, number][] = [];
  edits.forEach((edit, index) => {
    if (edit.kind === ' ') return;
    const last = ranges.at(-1);
    if (last && index - last[1] <= 2 * CONTEXT_LINES + 1) last[1] = index;
    else ranges.push([index, index]);
  });

  // Line numbers (0-based) of each edit in the old and new texts.
  const oldLineAt: number[] = [];
  const newLineAt: number[] = [];
  let oldLine = 0;
  let newLine = 0;
  for (const edit of edits) {
    oldLineAt.push(oldLine);
    newLineAt.push(newLine);
    if (edit.kind !== '+') oldLine++;
    if (edit.kind !== '-') newLine++;
  }

  return ranges.map(([firstChange, lastChange]) => {
    const start = Math.max(0, firstChange - CONTEXT_LINES);
    const hunk = edits.slice(start, Math.min(edits.length, lastChange + CONTEXT_LINES + 1));
    const oldLines = hunk.filter((edit) => edit.kind !== '+').length;
    const newLines = hunk.filter((edit) => edit.kind !== '-').length;
    return {
      // 1-based; formatPatch writes an empty range as diff(1) does, by the line before it.
      oldStart: oldLineAt[start]! + 1,
      oldLines,
      newStart: newLineAt[start]! + 1,
      newLines,
      lines: hunk.flatMap(({ kind, line }) =>
        line.endsWith('\n') ? [`${kind}${line.slice(0, -1)}`] : [`${kind}${line}`, '\\ No newline at end of file'],
      ),
    };
  });
}
