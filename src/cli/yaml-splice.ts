import { isDeepStrictEqual } from 'node:util';
import { Document, isAlias, isMap, isNode, isPair, isScalar, isSeq, parseDocument, visit, type Pair, type YAMLMap, type YAMLSeq } from 'yaml';
import type { PatchOperation } from '../mutate/result';
import { applyPatchToTemplate, editSyntaxTree, findPair, keyText, pointerKeys, toPlainJson } from './yaml-patch';
import { KUBERNETES_YAML_VERSION, parseYamlStream, printDocument, type StreamDocument, usesIndentedSequences } from './yaml-stream';

/**
 * Edits the text of a YAML document so that it changes only where a mutation patch changes something:
 * GitOps users review `inject`'s output as a diff, and a re-serialised document re-indents lists and
 * re-quotes strings nobody touched.
 *
 * Each operation of the patch is spliced into the text of its pod template: a value's source range is
 * replaced, a new key goes after the last entry of its map at that map's indentation, a removed entry
 * takes its lines with it, a new list item is written in the style (compact `- x` under its key, or
 * indented) of its list. New values are written in block style with the indentation, list style and
 * quoting of the lines around them; comments outside what is replaced or removed stay. The template's
 * text is cut out of the document and parsed again whenever an operation depends on the result of an
 * earlier one, so the work stays linear in the size of the input.
 *
 * The syntax tree edited by `applyPatchToTemplate` stays the reference: the spliced document must read
 * back as exactly that tree. A shape the splicer does not edit (a template written in flow style,
 * something between a list's `-` and its value, a tag or anchor before a replaced value, a template
 * that reads differently on its own because of anchors or tags defined elsewhere) or any disagreement
 * falls back to re-serialising the whole document, which is correct if noisier; that output is checked
 * the same way.
 */

/** A shape the splicer does not edit; the document is then re-serialised whole. */
export class UnsupportedShape extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedShape';
  }
}

export interface PrintedDocument {
  text: string;
  /** True when only the patched lines changed; false when the document was re-serialised whole. */
  spliced: boolean;
  /** Why the splice was not used, or null. */
  fallbackReason: string | null;
}

/** A pod template's text, cut out of its document so that it can be parsed and edited on its own. */
interface TemplateText {
  /** Offsets of the cut in the document's text. */
  start: number;
  end: number;
  /** The template's text; a List item's `- ` before its first key is blanked out. */
  text: string;
  /** The List item's `- ` (and the indentation before it) that `text` starts with blanked out, or null. */
  itemPrefix: string | null;
  /** What the template reads as in its document, before the patch. */
  json: unknown;
}

/**
 * Patches pod templates of one document: `apply` edits the syntax tree (the reference, verified against
 * fast-json-patch) and records where the template's text is, before the tree changes; `print` splices.
 */
export class DocumentPatcher {
  private readonly patched: { template: TemplateText | UnsupportedShape; patch: readonly PatchOperation[] }[] = [];

  constructor(private readonly original: StreamDocument) {}

  /** Throws what `applyPatchToTemplate` throws: an InputError for an alias in the way, an Error for a bug. */
  apply(template: YAMLMap, patch: readonly PatchOperation[]): void {
    const text = cutTemplate(this.original, template);
    applyPatchToTemplate(this.original.document, template, patch);
    this.patched.push({ template: text, patch });
  }

  /** Throws an Error (a drainguard bug) if even the re-serialised document does not read as the patched one. */
  print(): PrintedDocument {
    const { document, source } = this.original;
    const expected = toPlainJson(document.toJS());
    let fallbackReason: string;
    try {
      const text = this.splice();
      const difference = differenceFrom(text, expected);
      if (difference === null) return { text, spliced: true, fallbackReason: null };
      fallbackReason = `the spliced text ${difference}`;
    } catch (error) {
      // Anything the splicer throws, including its own bugs, leaves the correct (if noisier) way out.
      fallbackReason = error instanceof Error ? error.message : String(error);
    }
    const text = printDocument(document, source);
    const difference = differenceFrom(text, expected);
    if (difference !== null) throw new Error(`the re-serialised document ${difference}`);
    return { text, spliced: false, fallbackReason };
  }

  private splice(): string {
    const cuts = this.patched.map(({ template, patch }) => {
      if (template instanceof UnsupportedShape) throw template;
      return { template, patch };
    });
    // From the last template to the first, so that the offsets of those not yet spliced stay valid.
    cuts.sort((a, b) => b.template.start - a.template.start);
    let text = this.original.source;
    const defaultIndentSeq = usesIndentedSequences(text);
    for (const { template, patch } of cuts) {
      text = text.slice(0, template.start) + spliceTemplate(template, patch, defaultIndentSeq) + text.slice(template.end);
    }
    return text;
  }
}

/** Null when `text` is one YAML document that reads as `expected`, else what is wrong with it. */
function differenceFrom(text: string, expected: unknown): string | null {
  let documents;
  try {
    documents = parseYamlStream(text, 'the edited document');
  } catch (error) {
    return `is not valid YAML: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (documents.length !== 1) return `holds ${documents.length} documents`;
  let actual: unknown;
  try {
    actual = toPlainJson(documents[0]!.document.toJS());
  } catch (error) {
    return `cannot be read: ${error instanceof Error ? error.message : String(error)}`;
  }
  return isDeepStrictEqual(actual, expected) ? null : 'does not read as the patched document';
}

function cutTemplate(original: StreamDocument, template: YAMLMap): TemplateText | UnsupportedShape {
  try {
    return cutTemplateText(original, template);
  } catch (error) {
    if (error instanceof UnsupportedShape) return error;
    throw error;
  }
}

function cutTemplateText({ source, offset, document }: StreamDocument, template: YAMLMap): TemplateText {
  if (template.flow) throw new UnsupportedShape('the pod template is written in flow style');
  const text = new SourceText(source, offset);
  const first = text.range(template)[0];
  let lineStart = text.lineStart(first);
  if (source.startsWith('\uFEFF', lineStart)) lineStart++;
  const prefix = source.slice(lineStart, first);
  if (!/^[ -]*$/.test(prefix)) throw new UnsupportedShape('the pod template does not start its own line');
  const column = prefix.length;
  const itemPrefix = prefix.includes('-') ? prefix : null;
  // Comment lines just above the first key, at its indentation, belong to the template.
  const start = itemPrefix === null ? text.backOverComments(lineStart, column) : lineStart;
  const end = text.skipDeeperComments(text.entryEnd(template), column);
  const cut = itemPrefix === null ? source.slice(start, end) : ' '.repeat(column) + source.slice(first, end);
  return { start, end, text: cut, itemPrefix, json: toPlainJson(template.toJS(document)) };
}

/**
 * Splices a patch into the text of a pod template. Operations are computed together on one parse as
 * long as none depends on another's result (a path through what an earlier one added, replaced or
 * renumbered) and their edits do not touch; then the text is parsed again for the next ones.
 */
function spliceTemplate(template: TemplateText, patch: readonly PatchOperation[], defaultIndentSeq: boolean): string {
  const { itemPrefix } = template;
  const itemLine = itemPrefix !== null;
  // Like applyPatchToTemplate: a template may omit `metadata`, a pod never does.
  const steps: (PatchOperation | 'metadata')[] = ['metadata', ...patch];
  let current = template.text;
  let next = 0;
  while (next < steps.length) {
    const pass = new SplicePass(current, defaultIndentSeq, itemLine);
    if (next === 0 && !isDeepStrictEqual(pass.json(), template.json)) {
      throw new UnsupportedShape('the pod template reads differently on its own (anchors, tags or directives from elsewhere in the document)');
    }
    const batch: SplicedStep[] = [];
    while (next < steps.length) {
      const step = steps[next]!;
      const path = step === 'metadata' ? ['metadata'] : pointerKeys(step.path);
      if (batch.some((done) => dependsOn(path, done))) break;
      let spliced: SplicedStep;
      try {
        spliced = step === 'metadata' ? pass.metadataEdits() : pass.edits(step);
      } catch (error) {
        // What an earlier operation of the batch adds is not in this parse yet.
        if (batch.length > 0 && error instanceof UnsupportedShape) break;
        throw error;
      }
      const { touched } = spliced;
      if (batch.some((done) => touches(done.edits, spliced.edits) || (touched !== null && dependsOn(touched, done)))) break;
      batch.push(spliced);
      next++;
    }
    current = applyEdits(current, batch.flatMap((done) => done.edits));
  }
  if (itemPrefix === null) return current;
  const blanked = ' '.repeat(itemPrefix.length);
  if (!current.startsWith(blanked)) throw new UnsupportedShape("an edit reached the list item's `- `");
  return itemPrefix + current.slice(blanked.length);
}

/** The edits of one operation, and what they change, for `spliceTemplate` to know what may share a parse. */
interface SplicedStep {
  edits: TextEdit[];
  /** The path of the node whose text the edits change; null when there are none. */
  touched: readonly string[] | null;
  /** The path of a list whose items the edits renumber, or null. */
  renumbered: readonly string[] | null;
}

/** Whether an operation at `path` must see the text after `done`'s edits. */
function dependsOn(path: readonly string[], done: SplicedStep): boolean {
  const touched = done.touched !== null && (isPrefix(done.touched, path) || isPrefix(path, done.touched));
  return touched || (done.renumbered !== null && isPrefix(done.renumbered, path));
}

function isPrefix(prefix: readonly string[], path: readonly string[]): boolean {
  return prefix.length <= path.length && prefix.every((key, index) => key === path[index]);
}

/** Edits that overlap or meet; new entries appended to the same collection may meet, they stay in order. */
function touches(done: readonly TextEdit[], edits: readonly TextEdit[]): boolean {
  const appendedTogether = (a: TextEdit, b: TextEdit) => a.appendsTo !== undefined && a.appendsTo === b.appendsTo && a.start === b.start;
  return done.some((a) => edits.some((b) => a.start <= b.end && b.start <= a.end && !appendedTogether(a, b)));
}

interface TextEdit {
  start: number;
  end: number;
  text: string;
  /** For new entries after the last one of a collection: that collection's offset in the text. */
  appendsTo?: number;
}

/** Applies non-overlapping edits; at one offset, edits computed earlier end up first in the text. */
function applyEdits(text: string, edits: readonly TextEdit[]): string {
  const ordered = edits.map((edit, order) => ({ ...edit, order })).sort((a, b) => a.start - b.start || a.order - b.order);
  const pieces: string[] = [];
  let cursor = 0;
  for (const edit of ordered) {
    if (edit.start < cursor) throw new UnsupportedShape('two edits overlap');
    pieces.push(text.slice(cursor, edit.start), edit.text);
    cursor = edit.end;
  }
  pieces.push(text.slice(cursor));
  return pieces.join('');
}

type Collection = YAMLMap | YAMLSeq;

/** How a value hangs in its parent: as a map entry or as a list item. */
type Entry = { kind: 'pair'; map: YAMLMap; pair: Pair } | { kind: 'item'; seq: YAMLSeq; index: number };

interface Located {
  node: Collection;
  /** How the node is reached from the previous one; null for the template itself. */
  entry: Entry | null;
}

interface Style {
  indent: number;
  indentSeq: boolean;
  singleQuote: boolean | null;
}

const COMMENT_OR_NOTHING = /^[ \t]*(#.*)?$/;
const INDEX = /^(0|[1-9]\d*)$/;
/** A throw-away key: `render` needs one to write a replaced value, and only the text after it is kept (the source keeps its own key). */
const KEY_DISCARDED_FROM_RENDERING = 'k';

/** One parse of a template's text, and the edits of the operations that can share it. */
class SplicePass {
  private readonly document;
  private readonly root: YAMLMap;
  private readonly source: SourceText;
  private readonly eol: string;
  private readonly singleQuote: boolean | null;
  private style: Style;

  /**
   * @param itemLine the text starts with a List item's blanked-out `- `: nothing may go before its first line.
   */
  constructor(
    text: string,
    private readonly defaultIndentSeq: boolean,
    private readonly itemLine: boolean,
  ) {
    this.document = parseDocument(text, { version: KUBERNETES_YAML_VERSION });
    const error = this.document.errors[0];
    if (error) throw new UnsupportedShape(`the edited template does not parse: ${error.message}`);
    if (!isMap(this.document.contents)) throw new UnsupportedShape('the pod template is not a map');
    this.root = this.document.contents;
    this.source = new SourceText(text, 0);
    this.eol = text.includes('\r\n') ? '\r\n' : '\n';
    let single = 0;
    let double = 0;
    visit(this.root, {
      Scalar: (_, scalar) => {
        if (scalar.type === 'QUOTE_SINGLE') single++;
        else if (scalar.type === 'QUOTE_DOUBLE') double++;
      },
    });
    // yaml's default (null) double-quotes unless single quotes avoid escapes; kubectl's output prefers single.
    this.singleQuote = single > double ? true : null;
    this.style = { indent: 2, indentSeq: defaultIndentSeq, singleQuote: this.singleQuote };
  }

  /** What the text reads as, or undefined when it cannot be read (an alias to an anchor it lacks). */
  json(): unknown {
    try {
      return toPlainJson(this.document.toJS());
    } catch {
      return undefined;
    }
  }

  metadataEdits(): SplicedStep {
    const edits = this.metadataTextEdits();
    return { edits, touched: edits.length > 0 ? ['metadata'] : null, renumbered: null };
  }

  private metadataTextEdits(): TextEdit[] {
    const pair = findPair(this.root, 'metadata');
    if (pair) return isMap(pair.value) ? [] : this.replaceEntry({ kind: 'pair', map: this.root, pair }, {});
    this.style = this.styleNear([this.root]);
    const column = this.source.column(this.source.range(this.root.items[0]!.key)[0]);
    const spec = findPair(this.root, 'spec');
    if (spec) {
      const keyStart = this.source.range(spec.key)[0];
      const lineStart = this.source.lineStart(keyStart);
      if (this.source.isBlank(lineStart, keyStart) && !(this.itemLine && lineStart === 0)) {
        return [this.insertLines(this.source.backOverComments(lineStart, column), this.indent(this.render('pair', 'metadata', {}), column))];
      }
    }
    return this.insertPairs(this.root, [['metadata', {}]]);
  }

  edits(operation: PatchOperation): SplicedStep {
    const keys = pointerKeys(operation.path);
    const last = keys.at(-1);
    if (last === undefined) throw new UnsupportedShape('an operation on the whole template');
    const parentKeys = keys.slice(0, -1);
    const chain = this.locate(parentKeys, operation.path);
    this.style = this.styleNear(chain.map(({ node }) => node));
    const step = (edits: TextEdit[], touched: readonly string[] = keys, renumbered: readonly string[] | null = null): SplicedStep => ({
      edits,
      touched: edits.length > 0 ? touched : null,
      renumbered: edits.length > 0 ? renumbered : null,
    });

    const flowAt = chain.findIndex(({ node }) => node.flow === true);
    if (flowAt === 0) throw new UnsupportedShape('the pod template is written in flow style');
    if (flowAt > 0) return step(this.rewriteFlow(chain[flowAt]!, keys.slice(flowAt), operation), keys.slice(0, flowAt));

    const { node: parent } = chain.at(-1)!;
    if (isMap(parent)) {
      const pair = findPair(parent, last);
      if (operation.op === 'remove') {
        if (!pair) throw new UnsupportedShape(`${operation.path}: no such key in the text`);
        return parent.items.length === 1 ? step(this.emptied(chain), parentKeys) : step(this.removePair(parent, pair));
      }
      return step(pair ? this.replaceValue({ kind: 'pair', map: parent, pair }, operation.value) : this.insertPairs(parent, [[last, operation.value]]));
    }
    const length = parent.items.length;
    const index = last === '-' ? length : INDEX.test(last) ? Number(last) : -1;
    if (operation.op === 'add') {
      if (index < 0 || index > length) throw new UnsupportedShape(`${operation.path}: no such position in the list`);
      return step(this.insertItem(parent, index, operation.value), keys, parentKeys);
    }
    if (index < 0 || index >= length) throw new UnsupportedShape(`${operation.path}: no such item in the list`);
    if (operation.op === 'replace') return step(this.replaceValue({ kind: 'item', seq: parent, index }, operation.value));
    return length === 1 ? step(this.emptied(chain), parentKeys) : step(this.removeItem(parent, index), keys, parentKeys);
  }

  /** The collections from the template down to the one `keys` names. */
  private locate(keys: readonly string[], path: string): Located[] {
    const chain: Located[] = [{ node: this.root, entry: null }];
    for (const key of keys) {
      const { node } = chain.at(-1)!;
      let entry: Entry | null = null;
      if (isMap(node)) {
        const pair = findPair(node, key);
        if (pair) entry = { kind: 'pair', map: node, pair };
      } else if (INDEX.test(key) && Number(key) < node.items.length) {
        entry = { kind: 'item', seq: node, index: Number(key) };
      }
      const value = entry ? entryValue(entry) : undefined;
      if (!entry || !(isMap(value) || isSeq(value))) throw new UnsupportedShape(`${path}: no map or list at ${key} in the text`);
      chain.push({ node: value, entry });
    }
    return chain;
  }

  /**
   * An edit inside a flow collection (`{}`, `[a, b]`, `{name: x}`): the outermost one is written again,
   * in block style along the edited path so that what drainguard adds stays readable; the rest of it
   * keeps its flow style. A removal keeps the flow style.
   */
  private rewriteFlow(top: Located, keys: readonly string[], operation: PatchOperation): TextEdit[] {
    const copy = top.node.clone() as Collection;
    // The comments around the collection stay where they are in the text.
    copy.comment = null;
    copy.commentBefore = null;
    editSyntaxTree(this.document, copy, keys, operation);
    if (operation.op !== 'remove') {
      let node: unknown = copy;
      for (const key of keys.slice(0, -1)) {
        if (isMap(node) || isSeq(node)) node.flow = false;
        node = isMap(node) ? findPair(node, key)?.value : isSeq(node) ? node.items[Number(key)] : undefined;
      }
      if (isMap(node) || isSeq(node)) node.flow = false;
    }
    return this.replaceEntry(top.entry!, copy);
  }

  /** The last entry of a collection is removed: it becomes `{}` or `[]`. */
  private emptied(chain: readonly Located[]): TextEdit[] {
    const { node, entry } = chain.at(-1)!;
    if (!entry) throw new UnsupportedShape('the pod template would become empty');
    return this.replaceEntry(entry, isMap(node) ? {} : []);
  }

  /**
   * Replaces what is there by `value`, changing as little text as possible: a map keeps the entries
   * whose values stay, a list of the same length keeps its unchanged items, a scalar is rewritten in
   * place; anything else is written again whole.
   */
  private replaceValue(entry: Entry, value: unknown): TextEdit[] {
    const old = entryValue(entry);
    if (isAlias(old)) throw new UnsupportedShape('a replaced value is a YAML alias');
    if (isNode(old) && isDeepStrictEqual(toPlainJson(old.toJS(this.document)), toPlainJson(value))) return [];
    if (isMap(old) && !old.flow && isPlainObject(value) && old.items.some((pair) => Object.hasOwn(value, keyText(pair)))) {
      return this.mergeMap(old, value);
    }
    if (isSeq(old) && !old.flow && Array.isArray(value) && old.items.length > 0 && value.length > 0) return this.mergeSeq(old, value);
    if (isScalar(old) && !isBlockScalar(old) && (value === null || typeof value !== 'object')) {
      const [start, end] = this.source.range(old);
      const rendered = this.render('item', undefined, value);
      const inline = end > start && !this.source.text.slice(start, end).includes('\n');
      if (inline && rendered.length === 1 && rendered[0]!.startsWith('- ')) {
        return [{ start, end, text: rendered[0]!.slice(2) }];
      }
    }
    return this.replaceEntry(entry, value);
  }

  /**
   * A list replaced by another: the items both begin and end with keep their text (a long string folded
   * over several lines stays as it is when a neighbour changes); between them, items are replaced in
   * place pairwise, and the rest are removed or inserted. Linear: one pass from each end.
   */
  private mergeSeq(old: YAMLSeq, value: readonly unknown[]): TextEdit[] {
    const same = (index: number, item: unknown) => {
      const node = old.items[index];
      return isNode(node) && !isAlias(node) && isDeepStrictEqual(toPlainJson(node.toJS(this.document)), toPlainJson(item));
    };
    const shortest = Math.min(old.items.length, value.length);
    let head = 0;
    while (head < shortest && same(head, value[head])) head++;
    let tail = 0;
    while (tail < shortest - head && same(old.items.length - 1 - tail, value[value.length - 1 - tail])) tail++;
    const oldMiddle = old.items.length - head - tail;
    const newMiddle = value.length - head - tail;
    const paired = Math.min(oldMiddle, newMiddle);
    const edits: TextEdit[] = [];
    for (let k = 0; k < paired; k++) edits.push(...this.replaceValue({ kind: 'item', seq: old, index: head + k }, value[head + k]));
    for (let k = paired; k < oldMiddle; k++) edits.push(...this.removeItem(old, head + k));
    // New items go before the first item kept at the end (or after the last item when none is).
    const before = head + oldMiddle;
    for (let k = paired; k < newMiddle; k++) edits.push(...this.insertItem(old, before, value[head + k]));
    return edits;
  }

  private mergeMap(old: YAMLMap, value: Record<string, unknown>): TextEdit[] {
    const edits: TextEdit[] = [];
    const present = new Set<string>();
    for (const pair of old.items) {
      const key = keyText(pair);
      present.add(key);
      edits.push(...(Object.hasOwn(value, key) ? this.replaceValue({ kind: 'pair', map: old, pair }, value[key]) : this.removePair(old, pair)));
    }
    const added = Object.entries(value).filter(([key]) => !present.has(key));
    if (added.length > 0) edits.push(...this.insertPairs(old, added));
    return edits;
  }

  /**
   * Writes an entry's value again, from after its `key:` or `-` to the end of its last line. A comment
   * on the entry's first line stays there; comments inside the old value go with it.
   */
  private replaceEntry(entry: Entry, value: unknown): TextEdit[] {
    const old = entryValue(entry);
    if (!isNode(old)) throw new UnsupportedShape('an entry without a value node');
    const { text } = this.source;
    const anchor = entry.kind === 'pair' ? this.colonEnd(entry.pair) : this.dashOf(entry.seq, entry.index) + 1;
    const column = this.source.column(entry.kind === 'pair' ? this.source.range(entry.pair.key)[0] : anchor - 1);
    const rendered = this.render(entry.kind, KEY_DISCARDED_FROM_RENDERING, value);
    const head = rendered[0]!.slice(entry.kind === 'pair' ? KEY_DISCARDED_FROM_RENDERING.length + 1 : 1);
    const rest = this.indent(rendered.slice(1), column);

    const [oldStart, oldEnd] = this.source.range(old);
    const sameLine = !text.slice(anchor, oldStart).includes('\n');
    const multiLineBlock = isBlockScalar(old) || ((isMap(old) || isSeq(old)) && !old.flow);
    let end: number;
    let kept: string;
    if (sameLine && !multiLineBlock) {
      end = this.source.contentEnd(oldEnd);
      kept = text.slice(oldEnd, end);
    } else {
      end = this.source.endBeforeBreak(isBlockScalar(old) ? this.source.entryEnd(old) : this.source.skipDeeperComments(this.source.entryEnd(old), column));
      kept = sameLine ? '' : text.slice(anchor, this.source.contentEnd(anchor));
    }
    if (!COMMENT_OR_NOTHING.test(kept)) throw new UnsupportedShape('something other than a comment between a key and its value (a tag or an anchor)');
    const firstLine = head === '' ? kept : head + kept;
    return [{ start: anchor, end, text: rest.length === 0 ? firstLine : [firstLine, ...rest].join(this.eol) }];
  }

  /** New entries go after the last entry of the map, and after comment lines indented under it. */
  private insertPairs(map: YAMLMap, entries: readonly (readonly [string, unknown])[]): TextEdit[] {
    const column = this.source.column(this.source.range(map.items[0]!.key)[0]);
    const last = map.items.at(-1)!;
    const at = this.source.skipDeeperComments(this.source.entryEnd(last.value ?? last.key), column);
    const lines = entries.flatMap(([key, value]) => this.indent(this.render('pair', key, value), column));
    return [{ ...this.insertLines(at, lines), appendsTo: this.source.range(map)[0] }];
  }

  private removePair(map: YAMLMap, pair: Pair): TextEdit[] {
    const keyStart = this.source.range(pair.key)[0];
    const column = this.source.column(keyStart);
    const end = this.source.skipDeeperComments(this.source.entryEnd(pair.value ?? pair.key), column);
    const lineStart = this.source.lineStart(keyStart);
    if (this.source.isBlank(lineStart, keyStart)) return [this.deleteLines(lineStart, end)];
    // The first entry of a list item (`- name: x`): the next entry moves up onto the `- ` line.
    const position = map.items.indexOf(pair);
    const next = map.items[position + 1];
    if (position !== 0 || !next) throw new UnsupportedShape('a removed map entry that does not start its line');
    const nextStart = this.source.range(next.key)[0];
    if (!/^\s*$/.test(this.source.text.slice(end, nextStart))) throw new UnsupportedShape("comments between a list item's first two entries");
    return [{ start: keyStart, end: nextStart, text: '' }];
  }

  private insertItem(seq: YAMLSeq, index: number, value: unknown): TextEdit[] {
    const dashColumn = this.source.column(this.dashOf(seq, 0));
    const lines = this.indent(this.render('item', undefined, value), dashColumn);
    if (index === seq.items.length) {
      const at = this.source.skipDeeperComments(this.source.entryEnd(seq.items.at(-1)), dashColumn);
      return [{ ...this.insertLines(at, lines), appendsTo: this.source.range(seq)[0] }];
    }
    const dash = this.dashOf(seq, index);
    const lineStart = this.source.lineStart(dash);
    if (!this.source.isBlank(lineStart, dash)) throw new UnsupportedShape('a list item that does not start its line');
    // Comment lines just above an item, at its indentation, stay with it.
    return [this.insertLines(this.source.backOverComments(lineStart, dashColumn), lines)];
  }

  private removeItem(seq: YAMLSeq, index: number): TextEdit[] {
    const dash = this.dashOf(seq, index);
    const lineStart = this.source.lineStart(dash);
    if (!this.source.isBlank(lineStart, dash)) throw new UnsupportedShape('a removed list item that does not start its line');
    return [this.deleteLines(lineStart, this.source.skipDeeperComments(this.source.entryEnd(seq.items[index]), this.source.column(dash)))];
  }

  /** Whole lines [start, end); at the end of a text without a final line break, the break before goes. */
  private deleteLines(start: number, end: number): TextEdit {
    const { text } = this.source;
    if (end === text.length && !text.endsWith('\n') && start > 0) return { start: this.source.endBeforeBreak(start), end, text: '' };
    return { start, end, text: '' };
  }

  /** Whole lines before the line that starts at `at` (or after the last line). */
  private insertLines(at: number, lines: readonly string[]): TextEdit {
    const { text } = this.source;
    if (at === text.length && text !== '' && !text.endsWith('\n')) return { start: at, end: at, text: this.eol + lines.join(this.eol) };
    return { start: at, end: at, text: lines.join(this.eol) + this.eol };
  }

  private colonEnd(pair: Pair): number {
    if (!isScalar(pair.key)) throw new UnsupportedShape('a map key that is not a scalar');
    const { text } = this.source;
    let position = this.source.range(pair.key)[1];
    while (text[position] === ' ' || text[position] === '\t') position++;
    if (text[position] !== ':') throw new UnsupportedShape('a map key not followed by `:` on its line');
    return position + 1;
  }

  private dashOf(seq: YAMLSeq, index: number): number {
    const dash = this.source.dashBefore(seq.items[index]);
    if (dash === null) throw new UnsupportedShape('something between a list item’s `-` and its value');
    return dash;
  }

  /** `key: value` (or `- value`) as block YAML in the local style, one string per line, not yet indented. */
  private render(kind: 'pair' | 'item', key: unknown, value: unknown): string[] {
    const out = new Document(null, { version: KUBERNETES_YAML_VERSION });
    const node = isNode(value) ? value : out.createNode(value, { aliasDuplicateObjects: false });
    if (kind === 'pair') {
      const map = out.createNode({}) as YAMLMap;
      const pair = out.createPair(key, null);
      pair.value = node;
      map.items.push(pair);
      out.contents = map;
    } else {
      const seq = out.createNode([]) as YAMLSeq;
      seq.items.push(node);
      out.contents = seq;
    }
    const text = out.toString({ lineWidth: 0, indent: this.style.indent, indentSeq: this.style.indentSeq, singleQuote: this.style.singleQuote });
    return text.split('\n').slice(0, -1);
  }

  /** Every line but empty ones (inside block scalars) indented by `column`. */
  private indent(lines: readonly string[], column: number): string[] {
    return lines.map((line) => (line === '' ? line : ' '.repeat(column) + line));
  }

  /**
   * The list and map indentation nearest the edit: the most common among the lists (and nested maps)
   * under the edited collection, else under its parent, and so on up to the template; else the whole
   * document's.
   */
  private styleNear(path: readonly Collection[]): Style {
    let indentSeq: boolean | null = null;
    let indent: number | null = null;
    for (let depth = path.length - 1; depth >= 0 && (indentSeq === null || indent === null); depth--) {
      const tally = this.tally(path[depth]!);
      if (indentSeq === null && tally.compact + tally.indented > 0) indentSeq = tally.indented >= tally.compact;
      if (indent === null && tally.steps.size > 0) indent = [...tally.steps].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]![0];
    }
    return { indent: indent ?? 2, indentSeq: indentSeq ?? this.defaultIndentSeq, singleQuote: this.singleQuote };
  }

  private tally(node: Collection): { compact: number; indented: number; steps: Map<number, number> } {
    const tally = { compact: 0, indented: 0, steps: new Map<number, number>() };
    visit(node, {
      Map: (_, map) => {
        if (map.flow) return visit.SKIP;
        for (const pair of map.items) {
          if (!isPair(pair) || !isScalar(pair.key) || !pair.key.range) continue;
          const keyColumn = this.source.column(pair.key.range[0]);
          const { value } = pair;
          if (isSeq(value) && !value.flow && value.items.length > 0) {
            const dash = this.source.dashBefore(value.items[0]);
            if (dash === null) continue;
            const dashColumn = this.source.column(dash);
            if (dashColumn === keyColumn) tally.compact++;
            else if (dashColumn > keyColumn) tally.indented++;
          } else if (isMap(value) && !value.flow && isScalar(value.items[0]?.key) && value.items[0].key.range) {
            const step = this.source.column(value.items[0].key.range[0]) - keyColumn;
            if (step > 0) tally.steps.set(step, (tally.steps.get(step) ?? 0) + 1);
          }
        }
        return undefined;
      },
    });
    return tally;
  }
}

function entryValue(entry: Entry): unknown {
  return entry.kind === 'pair' ? entry.pair.value : entry.seq.items[entry.index];
}

function isBlockScalar(node: unknown): boolean {
  return isScalar(node) && (node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Lines and columns of a text whose nodes' ranges are offsets `shift` characters further on. */
class SourceText {
  constructor(
    readonly text: string,
    private readonly shift: number,
  ) {}

  /** The node's range in this text. */
  range(node: unknown): [number, number] {
    const range = isNode(node) ? node.range : undefined;
    if (!range) throw new UnsupportedShape('a node without a source range');
    return [range[0] - this.shift, range[1] - this.shift];
  }

  lineStart(offset: number): number {
    return offset === 0 ? 0 : this.text.lastIndexOf('\n', offset - 1) + 1;
  }

  column(offset: number): number {
    return offset - this.lineStart(offset);
  }

  nextLineStart(offset: number): number {
    const lineBreak = this.text.indexOf('\n', offset);
    return lineBreak === -1 ? this.text.length : lineBreak + 1;
  }

  /** The end of the line holding `offset`, before its line break. */
  contentEnd(offset: number): number {
    const lineBreak = this.text.indexOf('\n', offset);
    if (lineBreak === -1) return this.text.length;
    return this.text[lineBreak - 1] === '\r' ? lineBreak - 1 : lineBreak;
  }

  /** For the start of a line, the end of the previous line's content (the text's end stays). */
  endBeforeBreak(lineStart: number): number {
    if (lineStart === 0 || this.text[lineStart - 1] !== '\n') return lineStart;
    return this.text[lineStart - 2] === '\r' ? lineStart - 2 : lineStart - 1;
  }

  isBlank(start: number, end: number): boolean {
    return /^[ \t]*$/.test(this.text.slice(start, end));
  }

  /** The indentation of a line that holds only a comment, else null. */
  private commentIndent(lineStart: number): number | null {
    const match = /^([ \t]*)#/.exec(this.text.slice(lineStart, this.contentEnd(lineStart)));
    return match ? match[1]!.length : null;
  }

  /** Past the comment lines that start at `at` and are indented deeper than `column`: they belong to what ends there. */
  skipDeeperComments(at: number, column: number): number {
    let position = at;
    while (position < this.text.length) {
      const indent = this.commentIndent(position);
      if (indent === null || indent <= column) break;
      position = this.nextLineStart(position);
    }
    return position;
  }

  /** Up over the comment lines just above `lineStart` that are indented exactly `column`. */
  backOverComments(lineStart: number, column: number): number {
    let position = lineStart;
    while (position > 0) {
      const previous = this.lineStart(position - 1);
      if (this.commentIndent(previous) !== column) break;
      position = previous;
    }
    return position;
  }

  /** The offset after the line break that ends a node's last line (the text's end if none). */
  entryEnd(node: unknown): number {
    if (isBlockScalar(node)) {
      const end = this.range(node)[1];
      return end > 0 && this.text[end - 1] === '\n' ? end : this.nextLineStart(end);
    }
    if ((isMap(node) || isSeq(node)) && !node.flow && node.items.length > 0) {
      const last = node.items.at(-1);
      return this.entryEnd(isPair(last) ? (last.value ?? last.key) : last);
    }
    return this.nextLineStart(this.range(node)[1]);
  }

  /** The `-` of a block list item, when only blanks separate it from the item's value; else null. */
  dashBefore(item: unknown): number | null {
    const range = isNode(item) ? item.range : undefined;
    if (!range) return null;
    let position = range[0] - this.shift - 1;
    while (position >= 0 && (this.text[position] === ' ' || this.text[position] === '\t')) position--;
    return position >= 0 && this.text[position] === '-' ? position : null;
  }
}
