/**
 * Tests and benchmarks point one way: the input generators both send (fixture pods, the AdmissionReview
 * envelope, pods grown with one kind of content, the fast-check pod generator) live with the tests'
 * support code in test/support/generators/, and a benchmark may import them (and the test cluster's
 * control plane, to run kube-apiserver); nothing in test/ imports
 * from bench/, so a change to a benchmark never changes what a test checks.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { importGraph } from '../support/import-graph';
import { repoPath } from '../support/repo';

/**
 * What the benchmark build may compile from test/: the generators and the repository paths they use,
 * and the real control plane's building blocks with the chart's rendering, which the reporter's
 * benchmark on kube-apiserver runs (bench/lib/report-real-cluster.ts).
 */
const SHARED_WITH_BENCHMARKS = [
  /^test\/support\/generators\/[^/]+\.ts$/,
  /^test\/support\/repo\.ts$/,
  /^test\/support\/helm\.ts$/,
  /^test\/support\/cluster\/(api|binaries|control-plane|network|pki|processes)\.ts$/,
];

/** Every repository file `tsc -p tsconfig.bench.json` compiles: its include and exclude applied, then all they import. */
function benchBuildFiles(): string[] {
  const configPath = repoPath('tsconfig.bench.json');
  const { config, error } = ts.readConfigFile(configPath, (path) => readFileSync(path, 'utf8'));
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const pending = ts.parseJsonConfigFileContent(config, ts.sys, dirname(configPath)).fileNames.map((file) => resolve(file));
  const seen = new Set<string>();
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const { fileName } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const base = resolve(dirname(file), fileName);
      const target = [`${base}.ts`, join(base, 'index.ts'), base].find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
      if (target === undefined) throw new Error(`${relative(repoPath(), file)}: cannot resolve ${fileName}`);
      pending.push(target);
    }
  }
  return [...seen].map((file) => relative(repoPath(), file));
}

test('the benchmark build compiles the benchmarks and, from test/, only the shared generators', () => {
  const files = benchBuildFiles();
  expect(files).toContain('bench/shutdown.ts');
  expect(files).toContain('test/support/generators/pod-arbitrary.ts');
  const fromTests = files.filter((file) => file.startsWith('test/'));
  expect(fromTests.filter((file) => !SHARED_WITH_BENCHMARKS.some((allowed) => allowed.test(file)))).toEqual([]);
});

/** `from/…: specifier` for every relative import of a file under `from` that lands under `into`. */
function crossings(from: string, into: string): string[] {
  const graph = importGraph(repoPath(from));
  return [...graph.specifiers].flatMap(([file, specifiers]) =>
    specifiers
      .filter((specifier) => specifier.startsWith('.') && relative(repoPath(), resolve(repoPath(from, dirname(file)), specifier)).startsWith(`${into}/`))
      .map((specifier) => `${from}/${file}: ${specifier}`),
  );
}

test('nothing in test/ imports from bench/', () => {
  expect(crossings('test', 'bench')).toEqual([]);
});

test('benchmarks do import the generators from test/support (so the check above sees crossings)', () => {
  expect(crossings('bench', 'test')).toContain('bench/fuzz/cases.ts: ../../test/support/generators/pod-arbitrary');
});
