/**
 * JSON value helpers of the core (src/mutate: the plan compares probes, the patch stage copies and
 * compares nodes), written as plain loops because they run over whole pods on every request.
 *
 * Not util.isDeepStrictEqual / structuredClone: those carry prototypes across realms (jest's VM
 * sandbox, for one), so a cloned array can fail `instanceof Array` in a library such as rfc6902,
 * and two identical JSON documents can compare unequal. Properties whose value is `undefined` do
 * not exist in JSON and are ignored.
 */

type JsonObject = Record<string, unknown>;

/** A JSON object or array: what a patch path goes through. */
export type JsonContainer = JsonObject | unknown[];

export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const aIsArray = Array.isArray(a);
  if (aIsArray !== Array.isArray(b)) return false;
  if (aIsArray) {
    const left = a as unknown[];
    const right = b as unknown[];
    if (left.length !== right.length) return false;
    for (let i = 0; i < left.length; i += 1) if (!jsonEqual(left[i], right[i])) return false;
    return true;
  }
  const left = a as JsonObject;
  const right = b as JsonObject;
  // The left side's names as a list, not `for...in` with `left[key]`: under that loop V8 (Node 24's
  // Maglev) specialises the keyed loads to the names it saw first, and the verification's pod-sized
  // compare then deoptimised it over and over (some 300 times in 20,000 mutate() calls, a tenth of
  // mutate()'s time on the Contour pod).
  const names = Object.keys(left);
  let leftKeys = 0;
  for (let i = 0; i < names.length; i += 1) {
    const key = names[i] as string;
    if (left[key] === undefined) continue;
    leftKeys += 1;
    if (!jsonEqual(left[key], right[key])) return false;
  }
  let rightKeys = 0;
  for (const key in right) if (right[key] !== undefined) rightKeys += 1;
  return leftKeys === rightKeys;
}

/**
 * Whether `actual` holds everything `expected` holds: every scalar equal, every field of an object
 * present (fields only `actual` has are allowed), every element of a list; a list whose elements all
 * carry a `name` is matched by name (elements only `actual` has are allowed), any other list element by
 * element, at the same length. How drainguard recognises what it wrote once the API server has stored
 * it: kube-apiserver defaults fields inside it (a container's terminationMessagePath, a probe's
 * scheme), and an admission plugin may add to its lists (the ServiceAccount token's mount).
 */
export function jsonCovers(actual: unknown, expected: unknown): boolean {
  if (actual === expected) return true;
  if (typeof actual !== 'object' || typeof expected !== 'object' || actual === null || expected === null) return false;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return false;
    if (expected.length > 0 && expected.every(hasName)) {
      return expected.every((item) => {
        const name = (item as JsonObject).name;
        const match = actual.find((candidate) => hasName(candidate) && (candidate as JsonObject).name === name);
        return match !== undefined && jsonCovers(match, item);
      });
    }
    if (actual.length !== expected.length) return false;
    for (let i = 0; i < expected.length; i += 1) if (!jsonCovers(actual[i], expected[i])) return false;
    return true;
  }
  if (Array.isArray(actual)) return false;
  const have = actual as JsonObject;
  const want = expected as JsonObject;
  for (const key of Object.keys(want)) if (want[key] !== undefined && !jsonCovers(have[key], want[key])) return false;
  return true;
}

function hasName(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as JsonObject).name === 'string';
}

/** Deep copy of a JSON value built from plain literals of the current realm. */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const copy = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i += 1) copy[i] = cloneJson(value[i]);
    return copy as T;
  }
  const copy: JsonObject = {};
  const source = value as JsonObject;
  for (const key in source) {
    const child = source[key];
    if (child === undefined) continue;
    // Assigning `__proto__` would set the copy's prototype and lose the key: define it as JSON.parse does.
    if (key === '__proto__') Object.defineProperty(copy, key, { value: cloneJson(child), enumerable: true, writable: true, configurable: true });
    else copy[key] = cloneJson(child);
  }
  return copy as T;
}

/**
 * A copy of one object or array, its children shared: the copy-on-write step of the patch builder's
 * draft and of the verification's working copy. Spread, because V8 copies a literal's properties in
 * one step (about 20 ns for a container here, 80 ns with a for-in loop); it builds plain literals of
 * the current realm, like `cloneJson`, and defines every own property as it is: a key named
 * `__proto__` stays a key (an assignment would make it the copy's prototype, and the draft would
 * inherit its fields). A JSON array has no holes to lose.
 */
export function shallowCopy<T extends JsonContainer>(node: T): T {
  if (Array.isArray(node)) return [...node] as T;
  return { ...node } as T;
}

/** Up to this many owned nodes a list is searched; past it they move into a Set. */
const SMALL_OWNED = 16;

/**
 * The nodes a copy-on-write walk has copied and may write to (the builder's draft, the verification's
 * working copy), found by identity. A list while it is short: a Set hashes every object it meets
 * for the first time (a call into the runtime in V8), and a pod's patch owns a handful of nodes. Past
 * `SMALL_OWNED` they move into a Set, so a patch of thousands of operations stays linear.
 */
export class OwnedNodes {
  private readonly few: JsonContainer[] = [];
  private many: Set<JsonContainer> | undefined;

  has(node: JsonContainer): boolean {
    if (this.many !== undefined) return this.many.has(node);
    for (let i = 0; i < this.few.length; i += 1) if (this.few[i] === node) return true;
    return false;
  }

  add(node: JsonContainer): void {
    if (this.many !== undefined) this.many.add(node);
    else if (this.few.push(node) > SMALL_OWNED) this.many = new Set(this.few);
  }
}
