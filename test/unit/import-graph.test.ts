/**
 * The source tree has no import cycle: between files, between directories (src/config,
 * src/mutate/plan...), or between the top-level modules of src/ (src/config and src/mutate as
 * wholes, whatever their subdirectories). The core's four stages run forwards: each imports only the
 * faces of the stages before it. Type-only imports count: a type cycle still ties two modules
 * together. The drain contract's files import only each other, because they are bundled into the
 * drain program as they are.
 */
import { readFileSync } from 'node:fs';
import { repoPath } from '../support/repo';
import { arrowCount, directoryGraph, findCycles, importGraph, stageViolations, topLevelGraph } from '../support/import-graph';

const graph = importGraph(repoPath('src'));

test('the graph is read: every file of src/ is in it, and every relative import names a file', () => {
  expect(graph.files).toContain('mutate/index.ts');
  expect(graph.files).toContain('shutdown/build/build-executable.mjs');
  expect(graph.imports.get('mutate/index.ts')).toContain('mutate/plan/index.ts');
  expect(graph.imports.get('mutate/result.ts')).toContain('mutate/patch/index.ts');
  expect(graph.unresolved).toEqual([]);
  expect(arrowCount(graph.imports)).toBeGreaterThan(graph.files.length);
});

test('no file is part of an import cycle', () => {
  expect(findCycles(graph.imports)).toEqual([]);
});

test('no directory is part of an import cycle', () => {
  expect(findCycles(directoryGraph(graph))).toEqual([]);
});

test('no top-level module of src/ is part of an import cycle', () => {
  const topLevel = topLevelGraph(graph);
  expect([...topLevel.keys()]).toEqual(expect.arrayContaining(['config', 'mutate', 'drain-contract']));
  expect(findCycles(topLevel)).toEqual([]);
});

/** The core's stages, in the order a pod goes through them (src/mutate/index.ts). */
const CORE_STAGES = ['parse', 'facts', 'plan', 'patch'];

test("the core's stages are its only directories, and each imports only the faces of the stages before it", () => {
  const directories = new Set(graph.files.filter((file) => file.startsWith('mutate/') && file.split('/').length > 2).map((file) => file.split('/')[1]));
  expect([...directories].sort()).toEqual([...CORE_STAGES].sort());
  expect(stageViolations(graph, 'mutate', CORE_STAGES)).toEqual([]);
  expect(graph.imports.get('mutate/index.ts')).toEqual(new Set(['config/types.ts', 'k8s/index.ts', 'k8s/shape.ts', 'k8s/validate.ts', 'mutate/result.ts', ...CORE_STAGES.map((stage) => `mutate/${stage}/index.ts`)]));
});

test('the plan decides from the facts alone: no file of plan/ names the Pod type', () => {
  const plan = graph.files.filter((file) => file.startsWith('mutate/plan/'));
  expect(plan.length).toBeGreaterThan(5);
  const namingPod = plan.filter((file) => /import[^;]*\bPod\b[^;]*from '\.\.\/\.\.\/k8s'/.test(readFileSync(repoPath('src', file), 'utf8')));
  expect(namingPod).toEqual([]);
});

test('the drain contract imports nothing outside its folder (and nothing from Node), the drain record nothing at all', () => {
  const contract = graph.files.filter((file) => file.startsWith('drain-contract/'));
  expect(contract).toEqual(expect.arrayContaining(['drain-contract/index.ts', 'drain-contract/flags.ts', 'drain-contract/drain-command.ts']));
  for (const file of contract) {
    const outside = (graph.specifiers.get(file) ?? []).filter((specifier) => !/^\.\/[a-z-]+$/.test(specifier));
    expect({ file, outside }).toEqual({ file, outside: [] });
  }
  expect(graph.specifiers.get('drain-record.ts')).toEqual([]);
});

describe('the cycle finder', () => {
  const graphOf = (arrows: Record<string, string[]>) => new Map(Object.entries(arrows).map(([from, to]) => [from, new Set(to)]));

  test('finds a cycle through several nodes, and only its members', () => {
    expect(findCycles(graphOf({ a: ['b'], b: ['c'], c: ['a', 'd'], d: [] }))).toEqual([['a', 'b', 'c']]);
  });

  test('finds a node that imports itself, and two separate cycles', () => {
    expect(findCycles(graphOf({ a: ['a'], b: ['c'], c: ['b'] }))).toEqual([['a'], ['b', 'c']]);
  });

  test('the top-level graph joins subdirectories: a cycle through two of them is one between wholes', () => {
    const files = (arrows: Record<string, string[]>) => ({
      files: Object.keys(arrows),
      imports: new Map(Object.entries(arrows).map(([from, to]) => [from, new Set(to)])),
      specifiers: new Map(),
      unresolved: [],
    });
    const layout = files({ 'config/load.ts': ['mutate/k8s/quantity.ts'], 'mutate/k8s/quantity.ts': [], 'mutate/plan/index.ts': ['config/types.ts'], 'config/types.ts': [] });
    expect(findCycles(directoryGraph(layout))).toEqual([]);
    expect(findCycles(topLevelGraph(layout))).toEqual([['config', 'mutate']]);
  });

  test('the stage check finds a backward import, an import of internals, and a stage importing the face', () => {
    const arrows = (pairs: Record<string, string[]>) => ({ imports: new Map(Object.entries(pairs).map(([from, to]) => [from, new Set(to)])) });
    const stages = ['read', 'decide', 'write'];
    const clean = arrows({
      'core/index.ts': ['core/read/index.ts', 'core/write/index.ts', 'other/x.ts'],
      'core/decide/rules.ts': ['core/read/index.ts', 'core/decide/index.ts', 'other/x.ts'],
      'core/write/index.ts': ['core/decide/index.ts', 'core/read/index.ts'],
    });
    expect(stageViolations(clean, 'core', stages)).toEqual([]);
    const broken = arrows({
      'core/read/a.ts': ['core/decide/index.ts'],
      'core/write/b.ts': ['core/decide/rules.ts', 'core/index.ts'],
      'core/index.ts': ['core/read/a.ts'],
      'core/extra/c.ts': ['core/read/index.ts'],
    });
    expect(stageViolations(broken, 'core', stages)).toEqual([
      'core/read/a.ts → core/decide/index.ts: read imports decide, a later stage',
      "core/write/b.ts → core/decide/rules.ts: write imports decide's internals, not its face core/decide/index.ts",
      "core/write/b.ts → core/index.ts: a stage imports the pipeline's own face",
      "core/index.ts → core/read/a.ts: core imports read's internals, not its face core/read/index.ts",
      'core/extra/c.ts → core/read/index.ts: extra is not a stage',
    ]);
  });

  test('finds none in a diamond', () => {
    expect(findCycles(graphOf({ a: ['b', 'c'], b: ['d'], c: ['d'], d: [] }))).toEqual([]);
  });
});
