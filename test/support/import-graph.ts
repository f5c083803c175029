/**
 * The import graph of a source tree, read with the TypeScript compiler's own pre-processor (imports,
 * `export … from`, `import type`, dynamic `import()` and `require()` alike), and the cycles in it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const SOURCE = /\.(ts|mts|cts|mjs|cjs|js)$/;
const RESOLVE_SUFFIXES = ['', '.ts', '.mts', '.cts', '.mjs', '.cjs', '.js', '/index.ts', '/index.mjs', '/index.js'];

export interface ImportGraph {
  /** Every source file, relative to the root. */
  files: string[];
  /** file → the files it imports (relative to the root); package and `node:` imports are left out. */
  imports: Map<string, Set<string>>;
  /** file → its import specifiers of any kind, packages included. */
  specifiers: Map<string, string[]>;
  /** Relative specifiers that name no file: `file: specifier`. */
  unresolved: string[];
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return SOURCE.test(entry) && !entry.endsWith('.d.ts') ? [path] : [];
  });
}

function resolveSpecifier(fromFile: string, specifier: string): string | undefined {
  const base = resolve(dirname(fromFile), specifier);
  for (const suffix of RESOLVE_SUFFIXES) {
    const candidate = `${base}${suffix}`;
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

export function importGraph(root: string): ImportGraph {
  const absoluteRoot = resolve(root);
  const paths = sourceFiles(absoluteRoot).sort();
  const graph: ImportGraph = { files: [], imports: new Map(), specifiers: new Map(), unresolved: [] };
  for (const path of paths) {
    const file = relative(absoluteRoot, path);
    const found = ts.preProcessFile(readFileSync(path, 'utf8'), true, true).importedFiles.map((entry) => entry.fileName);
    const targets = new Set<string>();
    for (const specifier of found) {
      if (!specifier.startsWith('.')) continue;
      const target = resolveSpecifier(path, specifier);
      if (target === undefined) graph.unresolved.push(`${file}: ${specifier}`);
      else if (target.startsWith(`${absoluteRoot}/`)) targets.add(relative(absoluteRoot, target));
    }
    graph.files.push(file);
    graph.imports.set(file, targets);
    graph.specifiers.set(file, found);
  }
  return graph;
}

/** The graph with the files grouped into nodes by `nodeOf`; arrows inside one node are left out. */
function groupedGraph(graph: ImportGraph, nodeOf: (file: string) => string): Map<string, Set<string>> {
  const nodes = new Map<string, Set<string>>();
  for (const [file, targets] of graph.imports) {
    const from = nodeOf(file);
    const arrows = nodes.get(from) ?? new Set<string>();
    for (const target of targets) if (nodeOf(target) !== from) arrows.add(nodeOf(target));
    nodes.set(from, arrows);
  }
  return nodes;
}

/** The graph with each directory as one node: `a/b.ts` importing `c/d.ts` is an arrow `a` → `c`. */
export function directoryGraph(graph: ImportGraph): Map<string, Set<string>> {
  return groupedGraph(graph, dirname);
}

/**
 * The graph with each top-level entry of the root as one node: `mutate/plan/index.ts` importing
 * `config/types.ts` is an arrow `mutate` → `config`; a file at the root (`drain-contract.ts`) is a node
 * of its own. A cycle here ties two of the tree's modules together even when no two of their
 * directories form one: `config` → `mutate/k8s` and `mutate/plan` → `config` is such a cycle.
 */
export function topLevelGraph(graph: ImportGraph): Map<string, Set<string>> {
  return groupedGraph(graph, (file) => file.split('/')[0] as string);
}

/**
 * The arrows that break a pipeline of stages: `root/<stage>/…` directories run in the order of `stages`.
 * A stage may import its own files, the face (`index.ts`) of a stage before it, and anything outside
 * `root`; never a stage after it, another stage's internals, or the files at `root` itself (the
 * pipeline's own face, which imports the stages). A file at `root` may import only the stages' faces.
 * Each violation reads `from → to: why`.
 */
export function stageViolations(graph: Pick<ImportGraph, 'imports'>, root: string, stages: readonly string[]): string[] {
  const stageOf = (file: string): string | undefined => {
    if (!file.startsWith(`${root}/`)) return undefined;
    const rest = file.slice(root.length + 1);
    const slash = rest.indexOf('/');
    return slash === -1 ? '' : rest.slice(0, slash);
  };
  const violations: string[] = [];
  for (const [file, targets] of graph.imports) {
    const from = stageOf(file);
    if (from === undefined) continue;
    for (const target of targets) {
      const to = stageOf(target);
      if (to === undefined || to === from) continue;
      const why =
        from !== '' && !stages.includes(from)
          ? `${from} is not a stage`
          : to === ''
            ? `a stage imports the pipeline's own face`
            : !stages.includes(to)
              ? `${to} is not a stage`
              : from !== '' && stages.indexOf(to) > stages.indexOf(from)
                ? `${from} imports ${to}, a later stage`
                : target !== `${root}/${to}/index.ts`
                  ? `${from === '' ? root : from} imports ${to}'s internals, not its face ${root}/${to}/index.ts`
                  : undefined;
      if (why !== undefined) violations.push(`${file} → ${target}: ${why}`);
    }
  }
  return violations;
}

/**
 * The cycles of a graph: each strongly connected component of more than one node, and each node
 * that imports itself (Tarjan's algorithm, so it is linear in nodes and arrows).
 */
export function findCycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;

  const visit = (node: string): void => {
    index.set(node, next);
    lowLink.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of edges.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        lowLink.set(node, Math.min(lowLink.get(node) as number, lowLink.get(target) as number));
      } else if (onStack.has(target)) {
        lowLink.set(node, Math.min(lowLink.get(node) as number, index.get(target) as number));
      }
    }
    if (lowLink.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || edges.get(node)?.has(node)) cycles.push(component.sort());
  };

  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

/** The number of arrows in a graph. */
export function arrowCount(edges: ReadonlyMap<string, ReadonlySet<string>>): number {
  let count = 0;
  for (const targets of edges.values()) count += targets.size;
  return count;
}
