import { isDeepStrictEqual } from 'node:util';
import { applyPatch, unescapePathComponent, type Operation } from 'fast-json-patch';
import { isAlias, isMap, isNode, isScalar, isSeq, visit, type Document, type Pair, type YAMLMap, type YAMLSeq } from 'yaml';
import type { Pod } from '../k8s';
import { InputError } from './errors';
import type { PatchOperation } from '../mutate/result';

/**
 * Applies a mutation patch to a pod template inside a YAML document, editing the document's syntax tree
 * so that everything the patch does not touch keeps its comments and style.
 *
 * fast-json-patch is the reference: the patch is applied to the template's plain-object form first
 * (which also validates it), the same operations are then replayed on the syntax tree, and the two
 * results must agree. A disagreement, or a patch that does not apply, is a drainguard bug.
 */
export function applyPatchToTemplate(document: Document.Parsed, template: YAMLMap, patch: readonly PatchOperation[]): void {
  const podView = podViewOf(document, template);
  // Copied: fast-json-patch inserts the operations' values by reference and later operations may edit them.
  const expected = applyPatch(toPlainJson(podView), toPlainJson(patch) as Operation[], true, true).newDocument;
  if (!template.has('metadata')) insertPairBefore(document, template, 'metadata', {}, 'spec');
  else if (!isMap(template.get('metadata', true))) template.set('metadata', document.createNode({}));
  for (const operation of patch) editSyntaxTree(document, template, pointerKeys(operation.path), operation);

  const actual = toPlainJson(template.toJS(document));
  if (!isDeepStrictEqual(actual, expected)) {
    throw new Error('the edited YAML does not match the patched pod template');
  }
}

/**
 * The pod the webhook would be sent for this template: its JSON form, with the `metadata` a workload's
 * template may omit but a pod never does.
 */
export function podViewOf(document: Document.Parsed, template: YAMLMap): Pod {
  const view = toPlainJson(template.toJS(document)) as Pod;
  return { ...view, metadata: view.metadata ?? {} };
}

/** The JSON the API server would see: dates as strings, no undefined, no YAML-only types. */
export function toPlainJson(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/** The keys of a JSON Pointer, unescaped (`/metadata/annotations/drainguard.io~1status` has three). */
export function pointerKeys(path: string): string[] {
  return path.split('/').slice(1).map(unescapePathComponent);
}

/**
 * Applies one operation to the syntax tree under `root`, `keys` being its path relative to `root`. The
 * collection the operation adds to or replaces in becomes block style: what drainguard adds is a block
 * of several lines, and `{name: x, annotations: {...}}` would not stay readable.
 */
export function editSyntaxTree(document: Document, root: YAMLMap | YAMLSeq, keys: readonly string[], operation: PatchOperation): void {
  const lastKey = keys.at(-1);
  if (lastKey === undefined) throw new Error(`patch operation on the whole pod is not supported: ${operation.path}`);

  // Aliases and anchors in the way are the user's YAML, not a bug: say what to change.
  const aliased = aliasedAnchors(document);
  let parent: unknown = root;
  for (const key of keys.slice(0, -1)) {
    parent = isSeq(parent) ? parent.get(Number(key), true) : isMap(parent) ? findPair(parent, key)?.value : undefined;
    if (isAlias(parent)) {
      throw new InputError(`drainguard must edit ${operation.path}, which is a YAML alias; editing it would also edit its anchor: expand the alias first`);
    }
    const anchor = isNode(parent) ? parent.anchor : undefined;
    if (anchor !== undefined && aliased.has(anchor)) throw anchorInTheWay(operation, anchor);
  }
  if (operation.op !== 'add' || isMap(parent)) {
    const replaced = isMap(parent) ? findPair(parent, lastKey)?.value : isSeq(parent) ? parent.get(Number(lastKey), true) : undefined;
    const anchor = anchorUsedIn(replaced, aliased);
    if (anchor !== undefined) throw anchorInTheWay(operation, anchor);
  }

  if ((isMap(parent) || isSeq(parent)) && operation.op !== 'remove') parent.flow = false;
  const node = operation.op === 'remove' ? undefined : document.createNode(operation.value, { aliasDuplicateObjects: false });
  if (isMap(parent)) {
    const pair = findPair(parent, lastKey);
    if (operation.op === 'remove') {
      if (!pair) throw new Error(`${operation.path}: no such key in the YAML (a merge key?)`);
      parent.items.splice(parent.items.indexOf(pair), 1);
    } else if (pair) pair.value = node;
    else parent.items.push(document.createPair(lastKey, node));
    return;
  }
  if (isSeq(parent)) {
    const index = lastKey === '-' ? parent.items.length : Number(lastKey);
    if (operation.op === 'add') parent.items.splice(index, 0, node);
    else if (operation.op === 'replace') parent.items[index] = node;
    else parent.items.splice(index, 1);
    return;
  }
  throw new Error(`${operation.path}: no map or list to edit in the YAML`);
}

function anchorInTheWay(operation: PatchOperation, anchor: string): InputError {
  const verb = operation.op === 'add' ? 'edit' : operation.op;
  return new InputError(
    `drainguard must ${verb} ${operation.path}, which holds the YAML anchor &${anchor} that an alias uses elsewhere; the alias would change too: expand the alias first`,
  );
}

/** The first anchor inside `node` (itself included) that an alias refers to. */
function anchorUsedIn(node: unknown, aliased: ReadonlySet<string>): string | undefined {
  if (aliased.size === 0 || !isNode(node)) return undefined;
  let found: string | undefined;
  visit(node, (_, child) => {
    if (isNode(child) && child.anchor !== undefined && aliased.has(child.anchor)) {
      found = child.anchor;
      return visit.BREAK;
    }
    return undefined;
  });
  return found;
}

/** The anchors of the document that aliases refer to; an alias-free document (the usual case) costs one walk. */
const aliasedAnchorsOf = new WeakMap<Document, Set<string>>();
function aliasedAnchors(document: Document): ReadonlySet<string> {
  let anchors = aliasedAnchorsOf.get(document);
  if (!anchors) {
    const found = new Set<string>();
    visit(document, { Alias: (_, alias) => void found.add(alias.source) });
    anchors = found;
    aliasedAnchorsOf.set(document, anchors);
  }
  return anchors;
}

function insertPairBefore(document: Document.Parsed, map: YAMLMap, key: string, value: unknown, beforeKey: string): void {
  const pair = document.createPair(key, value);
  const before = findPair(map, beforeKey);
  if (before) map.items.splice(map.items.indexOf(before), 0, pair);
  else map.items.push(pair);
}

/**
 * The entry whose key reads as `key` in JSON. A JSON Pointer segment is always a string, while YAML may
 * have parsed the key as a number (a label named `8080`) or a boolean (`on`, in YAML 1.1).
 */
export function findPair(map: YAMLMap, key: string): Pair | undefined {
  return map.items.find((pair): pair is Pair => keyText(pair) === key);
}

/** A map entry's key as a JSON Pointer segment names it. */
export function keyText(pair: Pair): string {
  return String(isScalar(pair.key) ? pair.key.value : pair.key);
}
