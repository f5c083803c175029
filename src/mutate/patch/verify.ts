/**
 * Before answering, the core applies its own patch to a copy of the input with fast-json-patch (the
 * same kind of applier the API server uses) and validates the result. Any failure is a drainguard
 * bug and throws: a wrong patch must never reach the API server.
 *
 * The copy is structural: only the nodes on each operation's path are copied, just before the
 * operation is applied, and everything else stays shared with the input, which is never written to.
 * The builder's draft shares the same untouched nodes, so comparing the two costs only the copied
 * paths: a shared node is equal to itself, and neither side ever wrote to one.
 */
import { applyOperation, JsonPatchError, validator, type Operation, type Validator } from 'fast-json-patch';
import type { Pod } from '../k8s';
import { validatePod } from '../k8s/validate';
import type { PatchOperation } from './builder';
import { jsonEqual, shallowCopy, type JsonContainer } from './json';

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

/**
 * Makes the working copy writable along `pointer`, up to and including the parent of its last
 * segment: each node on the way is copied once (`owned` remembers the copies) and linked into its
 * copied parent, so the applier only ever writes to copies. The walk reads the pointer exactly as
 * fast-json-patch 3 does (`applyOperation`: split on `/`, `~1` and `~0` unescaped, an array index is
 * any run of digits taken with `~~`, `-` past the end), and stops where the applier will refuse the
 * operation (a segment that is not an object or array, `__proto__`) before writing anything.
 */
function ownPath(root: JsonContainer, pointer: string, owned: Set<JsonContainer>): void {
  let parent = root as Record<string | number, unknown>;
  let start = 1;
  // Every segment but the last: the last one is where the applier writes, into `parent`.
  for (let end = pointer.indexOf('/', start); end !== -1; start = end + 1, end = pointer.indexOf('/', start)) {
    const token = pointer.slice(start, end);
    let key: string | number = token.includes('~') ? token.replace(/~1/g, '/').replace(/~0/g, '~') : token;
    if (key === '__proto__') return;
    if (Array.isArray(parent)) {
      if (!isDigits(key)) return;
      key = ~~key;
    }
    const child = parent[key];
    if (!isContainer(child)) return;
    if (owned.has(child)) {
      parent = child as Record<string | number, unknown>;
      continue;
    }
    const copy = shallowCopy(child);
    owned.add(copy);
    parent[key] = copy;
    parent = copy as Record<string | number, unknown>;
  }
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
 * fast-json-patch's validation of one operation, with its document check done by comparing strings.
 * The applier calls it with the longest prefix of the operation's path that exists in the document;
 * its own validator splits both paths on `/` to compare their lengths on every operation, and that
 * was a third of the verification's cost. The rule is the same: `add` needs every segment but the last
 * to exist, `replace` and `remove` need the whole path. The checks that need no document (a known
 * `op`, a path starting with `/`, a value without `undefined` in it) are fast-json-patch's own
 * `validator`, run once per operation (the applier calls this twice).
 */
function operationValidator(index: number): Validator<unknown> {
  let checked = false;
  return (operation: Operation, _index, document, existingPath) => {
    if (!checked) {
      validator(operation, index);
      checked = true;
    }
    const { path } = operation;
    const resolvable = operation.op === 'add' ? existingPath === path || path.lastIndexOf('/') === existingPath.length : existingPath === path;
    if (!resolvable) {
      throw new JsonPatchError(`Cannot perform the operation at ${path}: only ${existingPath || 'the root'} exists`, 'OPERATION_PATH_UNRESOLVABLE', index, operation, document);
    }
  };
}

/** `patch` applied to a structural copy of `input` by fast-json-patch, with its validation on. */
function applyToCopy(input: Pod, patch: readonly PatchOperation[]): unknown {
  const document = shallowCopy(input as unknown as JsonContainer);
  const owned = new Set<JsonContainer>([document]);
  for (let index = 0; index < patch.length; index += 1) {
    const operation = patch[index] as PatchOperation;
    // drainguard emits only these, and never at the root: move and copy would read or write a second
    // path, and a new root would be the operation's own value, which must not be written to.
    if (operation.op !== 'add' && operation.op !== 'replace' && operation.op !== 'remove') {
      throw new Error(`operation ${index} is ${JSON.stringify((operation as { op: unknown }).op)}; drainguard emits only add, replace and remove`);
    }
    if (operation.path === '') throw new Error(`operation ${index} replaces the whole pod; drainguard never does`);
    if (typeof operation.path === 'string') ownPath(document, operation.path, owned);
    // The operation's value goes into the copy as it is: fast-json-patch never writes into it, and a
    // later operation below it finds it not owned and copies it first.
    applyOperation(document, operation, operationValidator(index), true, true, index);
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
