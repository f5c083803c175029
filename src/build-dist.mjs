#!/usr/bin/env node
/**
 * `npm run build`: src/ → dist/ with tsc, doing only what changed, and leaving nothing stale.
 *
 * - Up to date: when no file under src/, no tsconfig and not the lockfile changed since the last build
 *   (paths, sizes and modification times; a file added, removed or renamed changes its directory's) and
 *   every output is there, tsc does not run at all: `npm start` right after `npm ci` starts the server.
 * - Incremental: otherwise tsc runs with `--incremental`, its build info kept in
 *   node_modules/.cache/drainguard-build, so it re-checks and re-emits only what an edit reaches. When an
 *   output is missing (dist/ deleted), the build info is dropped first: tsc trusts it over the disk.
 * - Nothing stale: tsc never deletes the output of a source that is gone, and a stale
 *   dist/drain-contract.js shadows the folder dist/drain-contract/ (Node resolves the file first). After
 *   tsc, every .js, .js.map or .d.ts under dist/ that no source of src/ accounts for is removed, outside
 *   the folders other builds write (OTHER_BUILDS).
 * - The KubeConfig bundle: after tsc, dist/vendor/kube-config.cjs (src/kube-api/vendor-bundle.ts says
 *   what and why, and builds it from dist/), rebuilt with the rest: its inputs are the lockfile and src/.
 *
 * Node's standard library only, like check-node-version.mjs, which runs before it; esbuild (a
 * devDependency, installed before `prepare` runs this) only for the bundle, imported when needed.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
// Per checkout: a copy of the repository may link this node_modules (the npm start test does), and build
// info from another tree would tell tsc that this dist/ is current.
const CACHE = join(ROOT, 'node_modules/.cache/drainguard-build', createHash('sha256').update(ROOT).digest('hex').slice(0, 16));
const BUILD_INFO = join(CACHE, 'tsbuildinfo');
const STAMP = join(CACHE, 'inputs.sha256');
/** dist/ folders that are not tsc's: the drain program (npm run build:shutdown) and the release (npm run release). */
const OTHER_BUILDS = new Set(['envoy-shutdown', 'release']);
/** What tsc writes for a source (tsconfig.build.json: sourceMap, no declarations). */
const OUTPUT = /\.(js|js\.map|d\.ts)$/;

/** Every file and folder under `dir`, depth first, as absolute paths. */
function walk(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? [path, ...walk(path)] : [path];
  });
}

/** The sources tsconfig.build.json compiles: src/**\/*.ts but tests and declarations. */
const sources = walk(SRC).filter((path) => path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts'));
const expected = new Set(sources.flatMap((path) => [`${relative(SRC, path).slice(0, -'.ts'.length)}.js`, `${relative(SRC, path).slice(0, -'.ts'.length)}.js.map`]));

function inputsHash() {
  const hash = createHash('sha256');
  const files = [SRC, ...walk(SRC), ...['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'].map((name) => join(ROOT, name))];
  for (const path of files) {
    const { size, mtimeMs } = statSync(path);
    hash.update(`${relative(ROOT, path)}\0${size}\0${mtimeMs}\n`);
  }
  return hash.digest('hex');
}

/** The build's other output besides tsc's (not pruned: not a .js of tsc's). */
const KUBE_CONFIG_BUNDLE = join(DIST, 'vendor', 'kube-config.cjs');

const inputs = inputsHash();
const complete = [...expected].every((output) => existsSync(join(DIST, output))) && existsSync(KUBE_CONFIG_BUNDLE);
/** Removes what no source accounts for; deepest first, so a folder emptied of stale files goes after them. */
function pruneStale() {
  for (const path of walk(DIST).reverse()) {
    const name = relative(DIST, path);
    if (OTHER_BUILDS.has(name.split(sep)[0])) continue;
    if (statSync(path).isDirectory()) {
      if (readdirSync(path).length === 0) rmdirSync(path);
    } else if (OUTPUT.test(name) && !expected.has(name)) {
      process.stderr.write(`removed dist/${name}: its source is gone\n`);
      rmSync(path);
    }
  }
}

if (complete && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === inputs) {
  pruneStale();
  process.stderr.write('dist/ is up to date\n');
  process.exit(0);
}

mkdirSync(CACHE, { recursive: true });
rmSync(STAMP, { force: true });
if (!complete) rmSync(BUILD_INFO, { force: true });
const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--incremental', '--tsBuildInfoFile', BUILD_INFO], { stdio: 'inherit' });
} catch {
  // tsc printed the errors.
  process.exit(1);
}

pruneStale();
const { bundleKubeConfig } = await import(join(DIST, 'kube-api', 'vendor-bundle.js'));
await bundleKubeConfig(ROOT, KUBE_CONFIG_BUNDLE);
// npx runs the `drainguard` bin only when it is executable.
chmodSync(join(DIST, 'cli/main.js'), 0o755);
writeFileSync(STAMP, inputs);
