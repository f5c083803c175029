/**
 * Before answering, the core applies its own patch to a copy of the input with fast-json-patch (the
 * same kind of applier the API server uses) and validates the result. Any failure is a drainguard
 * bug and throws: a wrong patch must never reach the API server. Each operation is checked by the
 * rules of fast-json-patch's own validation (`checkAndOwnPath`), in the same walk that prepares the
 * copy, and then applied by fast-json-patch.
 *
 * The copy is structural: only the nodes on each operation's path are copied, just before the
 * operation is applied, and everything else stays shared with the input, which is never written to.
 * The builder's draft shares the same untouched nodes, so comparing the two costs only the copied
 * paths: a shared node is equal to itself, and neither side ever wrote to one.
 */
import { applyOperation } from 'fast-json-patch';
import type { Pod } from '../../k8s';
import { validatePod } from '../../k8s/validate';
import type { PatchOperation } from './builder';
import { jsonEqual, OwnedNodes, shallowCopy, type JsonContainer } from '../../json';

/**
 * Thrown only when drainguard's own patch fails verification (it does not apply, or the patched pod
 * has a violation the input did not have). That is always a drainguard bug, never the user's fault:
 * adapters answer it as an internal error rather than denying the pod.
 */
export class PatchVerificationError extends Error {
  constructor(
    message: string,
    /** The violations found in the patched pod that the input pod did not have. */
    readonly violations: readonly string[] = [],
  ) {
    super(message);
    this.name = 'PatchVerificationError';
  }
}

function isContainer(value: unknown): value is JsonContainer {
  return typeof value === 'object' && value !== null;
}

/** fast-json-patch's test for an array index: only the digits 0-9, any number of them (none included). */
function isDigits(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return false;
  }
  return true;
}

/**
 * fast-json-patch's `hasUndefined`: `undefined` anywhere inside `value` (an array hole included). A
 * value with one is not JSON: its serialised form (`null`, or the property gone) would not be the
 * value the builder's draft holds.
 */
function hasUndefined(value: unknown): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) if (hasUndefined(value[i])) return true;
    return false;
  }
  const object = value as Record<string, unknown>;
  for (const key in object) if (Object.prototype.hasOwnProperty.call(object, key) && hasUndefined(object[key])) return true;
  return false;
}

/** Why an operation does not apply: the applier's refusal, named. */
class OperationRefused extends Error {
  constructor(index: number, operation: PatchOperation, reason: string) {
    super(`operation ${index} (${String(operation.op)} ${JSON.stringify(operation.path)}): ${reason}`);
  }
}

/**
 * Checks operation `index` exactly as fast-json-patch 3's validating `applyOperation` does, and makes
 * the working copy writable along its path, so that the applier, run afterwards without its own
 * validation, only applies: it writes to copies alone and never meets a case its validation refuses.
 *
 * Its validation, once per operation rather than twice (and without joining path prefixes into
 * strings to compare their lengths, a third of the verification's cost before):
 * - the operation is an object, `op` is add, replace or remove (drainguard never emits the others),
 *   the path a string starting with `/` and not empty (drainguard never replaces the whole pod);
 * - add and replace carry a value with no `undefined` anywhere in it;
 * - the path resolves: every segment but the last names an object or array that exists, and the
 *   last one exists too unless the op is add (found as the applier finds it: `node[key] !==
 *   undefined`, inherited properties included); in an array a segment is a run of digits (read with
 *   `~~`, as the applier does) or `-` (the end), and an add's index is at most the array's length.
 * Segments are unescaped as the applier does (`~1` then `~0`); `__proto__`, and `prototype` after
 * `constructor`, are refused like the applier refuses them (it would throw a TypeError).
 *
 * Each object or array on the way is copied once (`owned` remembers the copies) and linked into its
 * copied parent.
 */
function checkAndOwnPath(root: JsonContainer, operation: PatchOperation, index: number, owned: OwnedNodes): void {
  if (typeof operation !== 'object' || operation === null || Array.isArray(operation)) {
    throw new Error(`operation ${index} is not an object`);
  }
  const { op, path } = operation;
  // drainguard emits only these, and never at the root: move and copy would read or write a second
  // path, and a new root would be the operation's own value, which must not be written to.
  if (op !== 'add' && op !== 'replace' && op !== 'remove') {
    throw new OperationRefused(index, operation, 'drainguard emits only add, replace and remove');
  }
  if (typeof path !== 'string') throw new OperationRefused(index, operation, 'the path is not a string');
  if (path === '') throw new OperationRefused(index, operation, 'it replaces the whole pod; drainguard never does');
  if (path.charCodeAt(0) !== 47 /* '/' */) throw new OperationRefused(index, operation, 'the path does not start with "/"');
  if (op !== 'remove' && hasUndefined(operation.value)) {
    throw new OperationRefused(index, operation, 'the value is missing or holds undefined');
  }

  let node = root as Record<string | number, unknown>;
  let previous = '';
  let start = 1;
  for (;;) {
    const end = path.indexOf('/', start);
    const last = end === -1;
    const token = last ? path.slice(start) : path.slice(start, end);
    const key = token.includes('~') ? token.replace(/~1/g, '/').replace(/~0/g, '~') : token;
    if (key === '__proto__' || (key === 'prototype' && previous === 'constructor')) {
      throw new OperationRefused(index, operation, `the segment ${key} is banned`);
    }
    // `at` is where the applier reads or writes, `child` what it finds there by `node[key]` (the key
    // as written: `01` is no element, although the applier would write `01` to element 1).
    let at: string | number = key;
    let child: unknown;
    if (Array.isArray(node)) {
      if (key === '-') at = node.length;
      else if (!isDigits(key)) throw new OperationRefused(index, operation, `${JSON.stringify(key)} is not an array index`);
      else at = ~~key;
      // An index written as the applier reads it names the element itself: one numeric read, rather
      // than a string key read that V8 must first turn into an index. Any other spelling (`-`, a
      // leading zero, 10 digits or more, which `~~` wraps) is read as the applier reads it.
      child = key.length < 10 && (key.charCodeAt(0) !== 48 || key.length === 1) ? node[at] : node[key];
      if (last && op === 'add' && (at as number) > node.length) {
        throw new OperationRefused(index, operation, 'the index is past the end of the array');
      }
    } else child = node[key];
    if (child === undefined && (!last || op !== 'add')) throw new OperationRefused(index, operation, 'the path does not exist');
    if (last) return;
    // Not last: `child` is defined, and `at` is `key` or the same element (a canonical index).
    if (!isContainer(child)) throw new OperationRefused(index, operation, 'the path goes through a value that is not an object or array');
    if (owned.has(child)) node = child as Record<string | number, unknown>;
    else {
      const copy = shallowCopy(child);
      owned.add(copy);
      node[at] = copy;
      node = copy as Record<string | number, unknown>;
    }
    previous = key;
    start = end + 1;
  }
}

/** `patch` applied to a structural copy of `input` by fast-json-patch, with the validation above. */
function applyToCopy(input: Pod, patch: readonly PatchOperation[]): unknown {
  const document = shallowCopy(input as unknown as JsonContainer);
  const owned = new OwnedNodes();
  owned.add(document);
  for (let index = 0; index < patch.length; index += 1) {
    const operation = patch[index] as PatchOperation;
    checkAndOwnPath(document, operation, index, owned);
    // Validation off: checkAndOwnPath has just done it. The operation's value goes into the copy as
    // it is: fast-json-patch never writes into it, and a later operation below it finds it not owned
    // and copies it first. `__proto__` stays banned by the applier itself (the fifth argument).
    applyOperation(document, operation, false, true, true, index);
  }
  return document;
}

export function verifyPatch(input: Pod, patch: readonly PatchOperation[], expected: Pod): void {
  let patched: Pod;
  try {
    patched = applyToCopy(input, patch) as Pod;
  } catch (error) {
    throw new PatchVerificationError(`drainguard bug: the patch does not apply: ${(error as Error).message}`);
  }
  if (!jsonEqual(patched, expected)) {
    throw new PatchVerificationError('drainguard bug: the patch does not produce the pod drainguard computed');
  }
  // Only violations the patch introduced count: the input's own problems are the API server's to report.
  // A patched pod without problems introduced none, so the input is only validated when there are some.
  const after = validatePod(patched);
  if (after.length === 0) return;
  const before = new Set(validatePod(input));
  const introduced = after.filter((problem) => !before.has(problem));
  if (introduced.length > 0) {
    throw new PatchVerificationError(`drainguard bug: the patched pod is invalid: ${introduced.join('; ')}`, introduced);
  }
}
