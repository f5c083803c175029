/**
 * How the admission suites compare pods field by field: a pod is read with its named lists (containers,
 * volumes, env, …) keyed by name, so a path names what it means (`spec.containers[name=envoy].lifecycle`)
 * however the list is ordered; the writes between two versions of a pod are the paths where they differ;
 * and a value "covers" what was written when every value written is there unchanged, with only fields
 * added inside the objects written (what the API server's defaulting adds).
 */

export type Path = readonly string[];

export interface Write {
  path: Path;
  kind: 'added' | 'removed' | 'changed';
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const KEY_PREFIX = '[name=';

/** The segment a list element named `name` has in a keyed view. */
export function named(name: string): string {
  return `${KEY_PREFIX}${name}]`;
}

function isKeyedList(value: unknown): value is Record<string, unknown> {
  return isObject(value) && Object.keys(value).length > 0 && Object.keys(value).every((key) => key.startsWith(KEY_PREFIX));
}

/**
 * `value` with every list whose elements are all objects with distinct string names turned into an
 * object keyed `[name=…]`. Other lists (command lines, tolerations, ports without names) stay lists and
 * are compared whole.
 */
export function keyed(value: unknown): unknown {
  if (Array.isArray(value)) {
    const names = value.map((item) => (isObject(item) && typeof item.name === 'string' ? item.name : undefined));
    const byName = value.length > 0 && names.every((name) => name !== undefined) && new Set(names).size === names.length;
    return byName ? Object.fromEntries(value.map((item, index) => [named(names[index]!), keyed(item)])) : value.map(keyed);
  }
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, keyed(field)]));
  return value;
}

export function valueAt(value: unknown, path: Path): unknown {
  let node = value;
  for (const segment of path) node = isObject(node) ? node[segment] : undefined;
  return node;
}

export function pathText(path: Path): string {
  return path.map((segment, index) => (segment.startsWith(KEY_PREFIX) || index === 0 ? segment : `.${segment}`)).join('');
}

function equal(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(value: unknown): Json {
  if (Array.isArray(value)) return value.map(canonical);
  if (isObject(value)) return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical(value[key])]));
  return value as Json;
}

/** Where `after` differs from `before` (both keyed views): the smallest paths added, removed or changed. */
export function writesBetween(before: unknown, after: unknown, path: Path = []): Write[] {
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    return keys.flatMap((key): Write[] => {
      if (!(key in before)) return [{ path: [...path, key], kind: 'added' }];
      if (!(key in after)) return [{ path: [...path, key], kind: 'removed' }];
      return writesBetween(before[key], after[key], [...path, key]);
    });
  }
  return equal(before, after) ? [] : [{ path, kind: 'changed' }];
}

export interface Coverage {
  /** Values written that the stored object changed or lost (each a finding). */
  changed: string[];
  /** Fields present only in the stored object, inside objects written (the API server's defaulting). */
  added: string[];
}

/**
 * Whether `stored` holds everything `written` holds: every scalar and every list element unchanged,
 * fields only `stored` has allowed inside objects (defaulting), but no element added to or removed from
 * a list, except the ServiceAccount admission plugin's token volume and its mounts (`isAdmissionAddition`).
 */
export function coverage(stored: unknown, written: unknown, path: Path, isAdmissionAddition: (path: Path) => boolean): Coverage {
  const result: Coverage = { changed: [], added: [] };
  const walk = (actual: unknown, expected: unknown, at: Path): void => {
    if (isObject(expected) && isObject(actual)) {
      for (const key of Object.keys(expected)) walk(actual[key], expected[key], [...at, key]);
      for (const key of Object.keys(actual).filter((k) => !(k in expected))) {
        const where = [...at, key];
        if (isKeyedList(expected) && !isAdmissionAddition(where)) result.changed.push(`${pathText(where)}: an element the API server added to a list drainguard wrote`);
        else result.added.push(pathText(where));
      }
      return;
    }
    if (Array.isArray(expected) && Array.isArray(actual) && expected.length === actual.length) {
      expected.forEach((item, index) => walk(actual[index], item, [...at, String(index)]));
      return;
    }
    if (!equal(actual, expected)) result.changed.push(`${pathText(at)}: drainguard wrote ${JSON.stringify(expected)}, the API server stores ${JSON.stringify(actual)}`);
  };
  walk(stored, written, path);
  return result;
}
