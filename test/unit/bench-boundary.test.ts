/**
 * Benchmarks stand apart from the tests: a test may import bench/lib's input generators (the pods and
 * reviews both send), but nothing the benchmark build compiles comes from test/, so a change to a test
 * helper never changes what a benchmark measures.
 */
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';
import { repoPath } from '../support/build';

const TEST_DIR = repoPath('test');
const inTests = (path: string) => path.startsWith(`${TEST_DIR}/`);

/** The files `tsc -p tsconfig.bench.json` starts from (its include and exclude applied). */
function benchBuildFiles(): string[] {
  const configPath = repoPath('tsconfig.bench.json');
  const { config, error } = ts.readConfigFile(configPath, (path) => readFileSync(path, 'utf8'));
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  return ts.parseJsonConfigFileContent(config, ts.sys, dirname(configPath)).fileNames.map((file) => resolve(file));
}

test('the benchmark build includes no test file, and does include the benchmarks', () => {
  const files = benchBuildFiles();
  expect(files).toContain(repoPath('bench/shutdown.ts'));
  expect(files.filter(inTests).map((file) => relative(repoPath(), file))).toEqual([]);
});

test('no file of the benchmark build imports from test/', () => {
  const intoTests: string[] = [];
  for (const file of benchBuildFiles()) {
    for (const { fileName } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
      if (fileName.startsWith('.') && inTests(resolve(dirname(file), fileName))) intoTests.push(`${relative(repoPath(), file)}: ${fileName}`);
    }
  }
  expect(intoTests).toEqual([]);
});
