/**
 * Builds a JSON Patch directly, one targeted operation at a time, while keeping a draft of the pod
 * with every operation so far applied. Steps read the draft (so a later one sees what an
 * earlier one added) and never have to reason about missing parents: `set` and `append` create
 * `/metadata/annotations`, `/spec/initContainers`, `lifecycle`, `resources`, `requests`... with a
 * single `add` of the nested value when they do not exist yet.
 *
 * The draft is copy-on-write: it starts as a shallow copy of the pod's root and shares every other
 * node with the input until an operation writes below it; then only the nodes on that operation's
 * path are copied (a handful of objects, however large the pod). The input is never written to, and
 * neither is a value an operation carries: the draft holds the operation's own value, so a later
 * write below it copies it first. A node read from the draft is therefore a snapshot, valid until
 * the next write; read again after writing.
 */
import type { Pod } from '../../k8s';
import { cloneJson, OwnedNodes, shallowCopy, type JsonContainer } from '../../json';

/** One RFC 6902 operation, as drainguard emits them (it never emits move/copy/test). */
export type PatchOperation =
  | { op: 'add'; path: string; value: unknown }
  | { op: 'replace'; path: string; value: unknown }
  | { op: 'remove'; path: string };

/** A field name or list index on the way from the pod's root to a value. */
export type PathSegment = string | number;

/**
 * RFC 6901: the only place that escapes a path segment. Annotation keys such as
 * `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes` contain `/`, and `~` must be
 * escaped first so that `~1` in a key is not mistaken for an escaped `/`.
 */
export function escapeSegment(segment: PathSegment): string {
  if (typeof segment === 'number') return String(segment);
  // Almost every field name has neither character: skip the replace passes. An annotation or label
  // key has a `/` and no `~`: one pass, of a string rather than a regular expression.
  const tilde = segment.indexOf('~') !== -1;
  if (!tilde && segment.indexOf('/') === -1) return segment;
  return (tilde ? segment.replaceAll('~', '~0') : segment).replaceAll('/', '~1');
}

export function toPointer(segments: readonly PathSegment[]): string {
  let pointer = '';
  for (const segment of segments) pointer += `/${escapeSegment(segment)}`;
  return pointer;
}

type Json = JsonContainer;

/** The CLI applies the same patch to a workload's `spec.template`: only these roots exist in both. */
const ALLOWED_ROOTS = new Set(['metadata', 'spec']);

function isContainer(value: unknown): value is Json {
  return typeof value === 'object' && value !== null;
}

function childOf(parent: Json, segment: PathSegment): unknown {
  if (Array.isArray(parent)) return typeof segment === 'number' ? parent[segment] : undefined;
  return Object.prototype.hasOwnProperty.call(parent, segment) ? parent[segment] : undefined;
}

/** `value` nested under `segments`: nest(['a', 'b'], 1) is { a: { b: 1 } }. */
function nest(segments: readonly PathSegment[], value: unknown): unknown {
  return segments.reduceRight<unknown>((inner, segment) => ({ [segment]: inner }), value);
}

export class PatchBuilder {
  private readonly operations: PatchOperation[] = [];
  private readonly draftPod: Pod;
  /** The draft's own nodes, copied on the way to a write; every other node is shared and read-only. */
  private readonly owned = new OwnedNodes();

  constructor(pod: Pod) {
    this.draftPod = this.own(pod as unknown as Json) as unknown as Pod;
  }

  /** The pod with every operation so far applied. Read it, never write it: it shares nodes with the input. */
  get draft(): Pod {
    return this.draftPod;
  }

  get patch(): PatchOperation[] {
    return [...this.operations];
  }

  get size(): number {
    return this.operations.length;
  }

  /**
   * Sets the value at `path`: `replace` when it exists, `add` otherwise. A missing (or non-object)
   * ancestor is created together with the value in one operation.
   */
  set(path: readonly PathSegment[], value: unknown): void {
    this.assertInScope(path);
    let parent: Json = this.draftPod as unknown as Json;
    for (let depth = 0; depth < path.length - 1; depth += 1) {
      const segment = path[depth] as PathSegment;
      const child = childOf(parent, segment);
      if (!isContainer(child)) {
        const created = nest(path.slice(depth + 1), cloneJson(value));
        this.write(parent, path.slice(0, depth + 1), child === undefined ? 'add' : 'replace', created);
        return;
      }
      parent = this.ownChild(parent, segment, child);
    }
    const leaf = path[path.length - 1] as PathSegment;
    this.write(parent, path, childOf(parent, leaf) === undefined ? 'add' : 'replace', cloneJson(value));
  }

  /** Appends to the array at `path` (by explicit index), creating the array when missing. */
  append(path: readonly PathSegment[], value: unknown): void {
    const current = this.read(path);
    if (Array.isArray(current)) this.set([...path, current.length], value);
    else this.set(path, [value]);
  }

  /** Removes the value at `path`; a no-op when it does not exist. */
  remove(path: readonly PathSegment[]): void {
    this.assertInScope(path);
    const leaf = path[path.length - 1] as PathSegment;
    const found = this.read(path.slice(0, -1));
    if (!isContainer(found) || childOf(found, leaf) === undefined) return;
    this.operations.push({ op: 'remove', path: toPointer(path) });
    let parent: Json = this.draftPod as unknown as Json;
    for (let depth = 0; depth < path.length - 1; depth += 1) {
      const segment = path[depth] as PathSegment;
      parent = this.ownChild(parent, segment, childOf(parent, segment) as Json);
    }
    if (Array.isArray(parent)) parent.splice(leaf as number, 1);
    else delete parent[leaf as string];
  }

  /** The draft's value at `path`, or undefined. */
  read(path: readonly PathSegment[]): unknown {
    let node: unknown = this.draftPod;
    for (const segment of path) {
      if (!isContainer(node)) return undefined;
      node = childOf(node, segment);
    }
    return node;
  }

  /** A copy of `node` that the draft owns and may write to. */
  private own(node: Json): Json {
    const copy = shallowCopy(node);
    this.owned.add(copy);
    return copy;
  }

  /** `parent[segment]` (`child`) as a node the draft owns: copied into `parent` on the first write below it. */
  private ownChild(parent: Json, segment: PathSegment, child: Json): Json {
    if (this.owned.has(child)) return child;
    const copy = this.own(child);
    if (Array.isArray(parent)) parent[segment as number] = copy;
    else parent[segment as string] = copy;
    return copy;
  }

  /**
   * `value` is already the builder's own copy: the operation and the draft hold the same object, and
   * neither is written to again (a later write below it copies it into the draft first).
   */
  private write(parent: Json, path: readonly PathSegment[], op: 'add' | 'replace', value: unknown): void {
    const leaf = path[path.length - 1] as PathSegment;
    this.operations.push({ op, path: toPointer(path), value });
    if (Array.isArray(parent)) {
      if (op === 'add') parent.splice(leaf as number, 0, value);
      else parent[leaf as number] = value;
    } else parent[leaf as string] = value;
  }

  private assertInScope(path: readonly PathSegment[]): void {
    if (path.length < 2 || !ALLOWED_ROOTS.has(String(path[0]))) {
      throw new Error(`drainguard bug: patch path ${toPointer(path)} is outside /metadata and /spec`);
    }
  }
}
