import { Composer, isAlias, isNode, LineCounter, Parser, visit, type Document } from 'yaml';
import { InputError } from './errors';

/**
 * A YAML stream split into documents such that the documents' `source` texts concatenate to the exact
 * input. That is what lets `inject` emit every document it did not change byte for byte (comments,
 * quoting, indentation, `---` markers), and re-serialise only the ones it edited.
 */
export interface StreamDocument {
  /** 1-based position in the stream, as users count documents. */
  number: number;
  /** The exact text of this document: leading comments and directives, `---`, content, a `...` end marker. */
  source: string;
  /** Where `source` starts in the stream: the document's node ranges are offsets in the stream. */
  offset: number;
  document: Document.Parsed;
}

/**
 * YAML 1.1, because that is what kubectl and the API machinery speak: `0644` is octal (a volume's
 * defaultMode), and a new string value such as "on" or "yes" must be written quoted or it would be read
 * back as a boolean.
 */
export const KUBERNETES_YAML_VERSION = '1.1';

/** Throws an InputError naming the document, line and column of the first syntax error. */
export function parseYamlStream(text: string, sourceName: string): StreamDocument[] {
  const lineCounter = new LineCounter();
  const tokens = [...new Parser(lineCounter.addNewLine).parse(text)];
  const documents = [...new Composer({ version: KUBERNETES_YAML_VERSION }).compose(tokens, true, text.length)];

  // Where each document's text begins: the first starts at 0; a later one at the first top-level token
  // after the previous document and its `...` marker, so comments and directives between documents
  // travel with the document they precede. Text after the last document belongs to the last one.
  const starts: number[] = [];
  let pendingStart: number | null = null;
  let previousWasDocument = false;
  for (const token of tokens) {
    if (token.type === 'document') {
      starts.push(starts.length === 0 ? 0 : (pendingStart ?? token.offset));
      pendingStart = null;
      previousWasDocument = true;
      continue;
    }
    const endsPreviousDocument = token.type === 'doc-end' && previousWasDocument;
    if (!endsPreviousDocument && starts.length > 0 && pendingStart === null) pendingStart = token.offset;
    previousWasDocument = false;
  }
  if (starts.length === 0) starts.push(0);
  if (documents.length !== starts.length) {
    throw new Error(`yaml stream split into ${starts.length} texts but ${documents.length} documents`);
  }

  return documents.map((document, index) => {
    const number = index + 1;
    const invalid = (offset: number, reason: string) => {
      const { line, col } = lineCounter.linePos(offset);
      return new InputError(`${sourceName}: document ${number}: invalid YAML at line ${line}, column ${col}: ${reason}`);
    };
    const error = document.errors[0];
    if (error) throw invalid(error.pos[0], (error.message.split('\n')[0] ?? error.message).replace(/ at line \d+, column \d+:?$/, ''));
    checkAliases(document, invalid, `${sourceName}: document ${number}`);
    const end = index + 1 < starts.length ? starts[index + 1] : text.length;
    const offset = starts[index]!;
    return { number, source: text.slice(offset, end), offset, document };
  });
}

/**
 * The parser accepts an alias whose anchor is missing or comes later, an alias inside its own anchor,
 * and aliases that expand exponentially; reading such a document throws. They are the user's YAML, so
 * they are InputErrors here, before anything reads the document.
 */
function checkAliases(document: Document.Parsed, invalid: (offset: number, reason: string) => InputError, where: string): void {
  const anchors = new Set<string>();
  let unresolved: InputError | null = null;
  visit(document, (_, node) => {
    if (isAlias(node) && !anchors.has(node.source)) {
      unresolved = invalid(node.range?.[0] ?? 0, `the alias *${node.source} has no anchor &${node.source} before it`);
      return visit.BREAK;
    }
    if (isNode(node) && node.anchor !== undefined) anchors.add(node.anchor);
    return undefined;
  });
  if (unresolved) throw unresolved;
  if (anchors.size === 0) return;
  try {
    // Also refuses an alias inside its own anchor, which JSON cannot hold.
    JSON.stringify(document.toJS());
  } catch (error) {
    throw new InputError(`${where}: its aliases cannot be expanded: ${error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error)}`);
  }
}

/**
 * Serialises a document drainguard edited, when its text cannot be spliced. Long strings are never
 * folded, block sequences follow the style most of the original uses (`key:\n- item`, kubectl's, or
 * `key:\n  - item`), and a document written with CRLF line breaks keeps them.
 */
export function printDocument(document: Document.Parsed, originalSource: string): string {
  const text = document.toString({ lineWidth: 0, indentSeq: usesIndentedSequences(originalSource) });
  return usesCrlf(originalSource) ? text.replaceAll('\n', '\r\n') : text;
}

function usesCrlf(source: string): boolean {
  const breaks = source.match(/\r?\n/g) ?? [];
  return breaks.length > 0 && breaks.every((lineBreak) => lineBreak === '\r\n');
}

/** Whether most block sequences under a key are indented (`key:\n  - item`) rather than compact. */
export function usesIndentedSequences(source: string): boolean {
  let compact = 0;
  let indented = 0;
  const lines = source.split('\n');
  lines.forEach((line, index) => {
    const item = /^( *)- /.exec(line);
    const parent = index > 0 ? /^( *)[^\s#-][^#]*:\s*$/.exec(lines[index - 1]!) : null;
    if (!item || !parent) return;
    if (item[1]!.length === parent[1]!.length) compact++;
    else indented++;
  });
  return indented >= compact;
}
