import { isAlias, isMap, isNode, isPair, isScalar, isSeq, LineCounter, parseAllDocuments, Parser, type Node } from 'yaml';
import { gnuLineEdits, splitLines } from '../../support/gnu-diff';

/**
 * A test oracle, independent of how `inject` edits text and of the diff `--diff` prints (lines are
 * matched by GNU diff): which lines of a diff change nothing.
 *
 * Each line of a YAML text states facts: `path = value` for every scalar written on it (a block scalar
 * on each of its lines), `path = {keys}` / `path = [n items]` for a key whose value is a collection, and
 * the text of every comment on it, and whether the collection it is in is written in block or flow
 * style. A list item's path segment is its `name` when it has one (as
 * Kubernetes merges containers, volumes, mounts and env entries), so that removing the first container
 * does not change the path of the others. A removed line is justified when one of its facts is no
 * longer stated anywhere in the new text; an added line when one of its facts was stated nowhere in
 * the old one. A line that is only re-indented, re-quoted or moved states no new fact: it is reported.
 */
export function unjustifiedChanges(before: string, after: string): string[] {
  const oldLines = splitLines(before);
  const newLines = splitLines(after);
  const old = factsByLine(oldLines);
  const updated = factsByLine(newLines);
  const problems: string[] = [];
  let oldLine = 0;
  let newLine = 0;
  for (const edit of gnuLineEdits(before, after)) {
    if (edit === 'delete') {
      const line = oldLines[oldLine]!;
      const facts = old.lines[oldLine] ?? new Set<string>();
      const stated = ![...facts].some((fact) => !updated.all.has(fact));
      if (stated && !updated.written.has(written(line, facts))) problems.push(`-${line.replace(/\r?\n$/, '')}`);
    } else if (edit === 'insert') {
      const line = newLines[newLine]!;
      const facts = updated.lines[newLine] ?? new Set<string>();
      const stated = ![...facts].some((fact) => !old.all.has(fact));
      if (stated && !old.written.has(written(line, facts))) problems.push(`+${line.replace(/\r?\n$/, '')}`);
    }
    if (edit !== 'insert') oldLine++;
    if (edit !== 'delete') newLine++;
  }
  return problems;
}

interface Facts {
  /** The facts stated on each line (0-based). */
  lines: Set<string>[];
  all: Set<string>;
  /** Each line's text with its facts (see `written`). */
  written: Set<string>;
}

/**
 * A line and what it states. When identical lines are next to each other (two volumes that both end
 * in `emptyDir: {}`), diff(1) may show either one as the added line: a line written exactly as before,
 * stating the same facts, is not a change the oracle reports.
 */
function written(line: string, facts: ReadonlySet<string>): string {
  return `${line.replace(/\r?\n$/, '')}\u0000${[...facts].sort().join('\u0000')}`;
}

function factsByLine(lines: readonly string[]): Facts {
  const text = lines.join('');
  const lineCounter = new LineCounter();
  const facts: Facts = { lines: [], all: new Set(), written: new Set() };
  const lineOf = (offset: number) => lineCounter.linePos(offset).line - 1;
  const state = (fact: string, from: number, to = from) => {
    for (let line = lineOf(from); line <= lineOf(Math.max(from, to - 1)); line++) (facts.lines[line] ??= new Set()).add(fact);
    facts.all.add(fact);
  };

  const documents = parseAllDocuments(text, { version: '1.1', lineCounter });
  if (!Array.isArray(documents)) return facts;
  documents.forEach((document, index) => {
    if (document.errors.length > 0) throw new Error(`invalid YAML in the oracle's input: ${document.errors[0]!.message}`);
    const describe = (node: unknown): string => {
      if (isMap(node)) return `{${node.items.map((pair) => String(isScalar(pair.key) ? pair.key.value : pair.key)).sort().join(',')}}`;
      if (isSeq(node)) return `[${node.items.length} items]`;
      if (isScalar(node)) return JSON.stringify(node.toJSON());
      if (isAlias(node)) return `*${node.source}`;
      return 'null';
    };
    const walk = (node: Node, path: string, inFlow: boolean) => {
      const [start, end] = node.range ?? [0, 0];
      if (isScalar(node) || isAlias(node) || inFlow || ((isMap(node) || isSeq(node)) && node.flow)) state(`${path} = ${describe(node)}`, start, end);
      const flow = inFlow || ((isMap(node) || isSeq(node)) && node.flow === true);
      // A collection written again in another style (a flow map drainguard adds to becomes block) changes its lines.
      const style = `${path} is ${flow ? 'flow' : 'block'}`;
      if (isMap(node)) {
        for (const pair of node.items) {
          if (!isPair(pair) || !isScalar(pair.key)) continue;
          const childPath = `${path}.${String(pair.key.value)}`;
          state(`${childPath} = ${describe(pair.value)}`, pair.key.range![0]);
          state(style, pair.key.range![0]);
          if (isMap(pair.value) || isSeq(pair.value)) state(`${childPath} is ${flow || pair.value.flow ? 'flow' : 'block'}`, pair.key.range![0]);
          if (pair.value && typeof pair.value === 'object') walk(pair.value as Node, childPath, flow);
        }
      } else if (isSeq(node)) {
        node.items.forEach((item, position) => {
          if (isNode(item) && item.range) state(style, item.range[0]);
          const name = isMap(item) ? item.get('name') : undefined;
          walk(item as Node, `${path}[${typeof name === 'string' ? `name=${name}` : position}]`, flow);
        });
      }
    };
    if (document.contents) walk(document.contents, `doc${index}`, false);
  });

  for (const token of new Parser().parse(text)) collectComments(token, (offset, source) => state(source.trim(), offset));
  lines.forEach((line, index) => facts.written.add(written(line, facts.lines[index] ?? new Set())));
  return facts;
}

function collectComments(token: unknown, found: (offset: number, source: string) => void): void {
  if (Array.isArray(token)) {
    for (const item of token) collectComments(item, found);
    return;
  }
  if (token === null || typeof token !== 'object') return;
  const record = token as Record<string, unknown>;
  if (record.type === 'comment' && typeof record.offset === 'number' && typeof record.source === 'string') {
    found(record.offset, record.source);
    return;
  }
  for (const value of Object.values(record)) collectComments(value, found);
}
