/**
 * The jest projects (jest.config.js): `unit` must pass after a plain `npm ci`, as any user, with no C
 * toolchain (`npm run test:unit`); `system` holds every suite that runs the drain executables, needs root
 * or the toolchain; `release` every suite that runs what `npm run release` builds; `kube` every suite
 * that needs the real Kubernetes control plane (Go to build it, root for its network namespaces). A suite that needs the executables cannot land in the unit lane by accident: every
 * test file belongs to exactly one lane, and nothing the unit lane loads reaches the modules that hand
 * out the executables or build roots for them. (.ci/run also runs the unit lane as an unprivileged user
 * with no compiler on PATH.)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { importGraph } from '../support/import-graph';
import { repoPath } from '../support/repo';

interface Project {
  displayName: string;
  roots: string[];
  globalSetup: string;
}
const config = require(repoPath('jest.config.js')) as { projects: Project[] };
const fromRootDir = (path: string) => path.replace('<rootDir>/', '');
const lane = (name: string) => {
  const project = config.projects.find((candidate) => candidate.displayName === name);
  if (project === undefined) throw new Error(`jest.config.js has no project ${name}`);
  return { roots: project.roots.map(fromRootDir), globalSetup: fromRootDir(project.globalSetup) };
};

/**
 * Modules (relative to test/) that only the system lane may load: the built drain executables and their
 * toolchain, and the chroots they run in (root).
 */
const SYSTEM_ONLY = ['support/drain-executables.ts', 'support/envoy/roots.ts', 'support/envoy/shutdown-executable.ts', 'support/release.ts'];
/** The test cluster (test/support/cluster/): only a lane whose globalSetup starts or builds it may load it. */
const isClusterModule = (file: string) => file.startsWith('support/cluster/');

function testFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) return testFiles(path);
    return entry.endsWith('.test.ts') ? [relative(repoPath(), path)] : [];
  });
}

const graph = importGraph(repoPath('test'));

/** Every file under test/ that `file` (relative to test/) loads, itself included. */
function closure(file: string): Set<string> {
  const seen = new Set<string>();
  const pending = [file];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (seen.has(next)) continue;
    seen.add(next);
    pending.push(...(graph.imports.get(next) ?? []));
  }
  return seen;
}

/** The unit lane's test files and its globalSetup, relative to test/. */
function unitEntries(): string[] {
  const unit = lane('unit');
  return [unit.globalSetup, ...unit.roots.flatMap((root) => testFiles(repoPath(root)))].map((file) => file.replace(/^test\//, ''));
}

test('the lanes are unit (unit, property, golden), system (integration, e2e), kube and release', () => {
  expect(lane('unit').roots).toEqual(['test/unit', 'test/property', 'test/golden']);
  expect(lane('system').roots).toEqual(['test/integration', 'test/e2e']);
  expect(lane('kube').roots).toEqual(['test/kube']);
  expect(lane('release').roots).toEqual(['test/release']);
});

test('every test file runs in exactly one lane', () => {
  const lanes = config.projects.map((project) => lane(project.displayName));
  const misplaced = testFiles(repoPath('test')).filter(
    (file) => lanes.filter(({ roots }) => roots.some((root) => file.startsWith(`${root}/`))).length !== 1,
  );
  expect(misplaced).toEqual([]);
});

test('nothing the unit lane loads reaches the drain executables, their toolchain or root', () => {
  const reaches = unitEntries().flatMap((entry) =>
    [...closure(entry)].filter((file) => SYSTEM_ONLY.includes(file)).map((file) => `test/${entry} loads test/${file}`),
  );
  expect(reaches).toEqual([]);
});

test('nothing the unit lane loads reaches the test cluster', () => {
  const reaches = unitEntries().flatMap((entry) => [...closure(entry)].filter(isClusterModule).map((file) => `test/${entry} loads test/${file}`));
  expect(reaches).toEqual([]);
});

test('the kube lane reaches the test cluster (so the check above follows imports)', () => {
  expect([...closure(lane('kube').globalSetup.replace(/^test\//, ''))].some(isClusterModule)).toBe(true);
  expect([...closure('kube/control-plane.test.ts')].some(isClusterModule)).toBe(true);
});

test('the system and release lanes do reach them (so the check above follows imports)', () => {
  expect(closure('e2e/shutdown/install.test.ts')).toContain('support/drain-executables.ts');
  expect(closure(lane('system').globalSetup.replace(/^test\//, ''))).toContain('support/drain-executables.ts');
  expect(closure(lane('release').globalSetup.replace(/^test\//, ''))).toContain('support/release.ts');
});

test('the unit lane never names the built drain program by path', () => {
  const builtProgram = ['dist', 'envoy-shutdown'].join('/'); // spelled so that this file does not name it
  const loaded = new Set(unitEntries().flatMap((entry) => [...closure(entry)]));
  const naming = [...loaded].filter((file) => readFileSync(repoPath('test', file), 'utf8').includes(builtProgram));
  expect(naming).toEqual([]);
});
