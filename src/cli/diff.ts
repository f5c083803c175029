/**
 * A unified diff (the `diff -u` / `git diff` format) of two texts, for `drainguard inject --diff`.
 * Line matching is Myers' O((N+M)·D) algorithm, so a large manifest with a few changed workloads stays
 * fast; the common head and tail are stripped first because that is where most lines of a manifest are.
 */

const CONTEXT_LINES = 3;

/**
 * Myers keeps one row of N+M integers per edit; past this many integers in total (64 MiB) the changed
 * middle is shown as removed and re-added instead, a correct if not minimal diff.
 */
const MAX_TRACE_INTEGERS = 16 * 1024 * 1024;

type EditKind = 'equal' | 'delete' | 'insert';

interface Edit {
  kind: EditKind;
  /** The line including its terminator ('\n'), or without one for a last line that has none. */
  line: string;
}

/** Empty string when the texts are equal. */
export function unifiedDiff(oldText: string, newText: string, oldLabel: string, newLabel: string): string {
  return unifiedDiffOfParts([{ before: oldText, after: newText }], oldLabel, newLabel);
}

/** One piece of a text and what it became, e.g. one YAML document. */
export interface ChangedPart {
  before: string;
  after: string;
}

/**
 * The diff of the concatenated `before`s against the concatenated `after`s, matching lines only within
 * each part. For a YAML stream diffed document by document that is both what a reader expects and much
 * cheaper than matching across a whole file with hundreds of changed workloads.
 */
export function unifiedDiffOfParts(parts: readonly ChangedPart[], oldLabel: string, newLabel: string): string {
  const edits = alignToLines(parts).flatMap(({ before, after }) =>
    before === after ? splitLines(before).map((line): Edit => ({ kind: 'equal', line })) : diffLines(splitLines(before), splitLines(after)),
  );
  if (edits.every((edit) => edit.kind === 'equal')) return '';
  return `--- ${oldLabel}\n+++ ${newLabel}\n${formatHunks(edits)}`;
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
export function splitLines(text: string): string[] {
  const lines = text.match(/[^\n]*\n|[^\n]+$/g);
  return lines ?? [];
}

export function diffLines(a: readonly string[], b: readonly string[]): Edit[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;

  const middle = myers(a.slice(head, a.length - tail), b.slice(head, b.length - tail));
  const equal = (line: string): Edit => ({ kind: 'equal', line });
  return [...a.slice(0, head).map(equal), ...middle, ...a.slice(a.length - tail).map(equal)];
}

function myers(a: readonly string[], b: readonly string[]): Edit[] {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  if (max === 0) return [];
  const offset = max + 1;
  // v[k + offset] = furthest x reached on diagonal k; one snapshot per edit distance d, for backtracking.
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let distance = -1;
  search: for (let d = 0; d <= max; d++) {
    if ((d + 1) * v.length > MAX_TRACE_INTEGERS) return replaceAll(a, b);
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && v[k - 1 + offset]! < v[k + 1 + offset]!);
      let x = down ? v[k + 1 + offset]! : v[k - 1 + offset]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[k + offset] = x;
      if (x >= n && y >= m) {
        distance = d;
        break search;
      }
    }
  }

  const edits: Edit[] = [];
  let x = n;
  let y = m;
  for (let d = distance; d > 0; d--) {
    const previous = trace[d]!;
    const k = x - y;
    const down = k === -d || (k !== d && previous[k - 1 + offset]! < previous[k + 1 + offset]!);
    const previousK = down ? k + 1 : k - 1;
    const previousX = previous[previousK + offset]!;
    const previousY = previousX - previousK;
    while (x > previousX && y > previousY) {
      edits.push({ kind: 'equal', line: a[--x]! });
      y--;
    }
    if (down) edits.push({ kind: 'insert', line: b[--y]! });
    else edits.push({ kind: 'delete', line: a[--x]! });
  }
  while (x > 0 && y > 0) {
    edits.push({ kind: 'equal', line: a[--x]! });
    y--;
  }
  return edits.reverse();
}

function replaceAll(a: readonly string[], b: readonly string[]): Edit[] {
  return [...a.map((line): Edit => ({ kind: 'delete', line })), ...b.map((line): Edit => ({ kind: 'insert', line }))];
}

function formatHunks(edits: readonly Edit[]): string {
  // Group changes whose context windows touch: a gap of up to 2×CONTEXT equal lines stays in one hunk.
  const changed = edits.map((edit, index) => (edit.kind === 'equal' ? -1 : index)).filter((index) => index >= 0);
  const ranges: [number, number][] = [];
  for (const index of changed) {
    const last = ranges.at(-1);
    if (last && index - last[1] <= 2 * CONTEXT_LINES + 1) last[1] = index;
    else ranges.push([index, index]);
  }

  // Line numbers (0-based) of each edit in the old and new texts.
  const oldLineAt: number[] = [];
  const newLineAt: number[] = [];
  let oldLine = 0;
  let newLine = 0;
  for (const edit of edits) {
    oldLineAt.push(oldLine);
    newLineAt.push(newLine);
    if (edit.kind !== 'insert') oldLine++;
    if (edit.kind !== 'delete') newLine++;
  }

  let out = '';
  for (const [firstChange, lastChange] of ranges) {
    const start = Math.max(0, firstChange - CONTEXT_LINES);
    const end = Math.min(edits.length - 1, lastChange + CONTEXT_LINES);
    const hunk = edits.slice(start, end + 1);
    const oldCount = hunk.filter((edit) => edit.kind !== 'insert').length;
    const newCount = hunk.filter((edit) => edit.kind !== 'delete').length;
    out += `@@ -${hunkRange(oldLineAt[start]!, oldCount)} +${hunkRange(newLineAt[start]!, newCount)} @@\n`;
    for (const edit of hunk) {
      const prefix = edit.kind === 'equal' ? ' ' : edit.kind === 'delete' ? '-' : '+';
      out += edit.line.endsWith('\n') ? `${prefix}${edit.line}` : `${prefix}${edit.line}\n\\ No newline at end of file\n`;
    }
  }
  return out;
}

/** `start,count` with diff(1)'s conventions: 1-based; an empty range names the line before it. */
function hunkRange(zeroBasedStart: number, count: number): string {
  if (count === 0) return `${zeroBasedStart},0`;
  if (count === 1) return `${zeroBasedStart + 1}`;
  return `${zeroBasedStart + 1},${count}`;
}
