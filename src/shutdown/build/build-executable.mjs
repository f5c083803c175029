#!/usr/bin/env node
/**
 * Builds the static `envoy-shutdown` executable for one architecture (docs/envoy-shutdown.md,
 * "Building"): `npm run build:shutdown -- --arch amd64|arm64` (default: this host's).
 *
 *   node src/shutdown/build/build-executable.mjs [--arch amd64|arm64] [--out DIR] [--if-changed]
 *                                                [--libc musl|glibc]
 *
 *   1. esbuild bundles src/shutdown/entry.ts for a neutral platform (no Node modules can be
 *      resolved), with platform/current.ts replaced by platform/current.quickjs.ts.
 *   2. qjsc, built here for the build host from the pinned QuickJS sources, compiles the bundle to
 *      bytecode in a C array.
 *   3. gcc (native, or Debian's cross gcc) compiles QuickJS, our host (runtime/host.c) and the
 *      bytecode, and links them statically against musl (toolchain.mjs): one file that needs no
 *      libc, no loader and no /proc at run time.
 *   4. The result is checked: an ELF for the target machine with no interpreter and no dynamic
 *      section, and `version` runs (under qemu-user for the other architecture).
 *
 * Output: DIR/envoy-shutdown (default DIR dist/envoy-shutdown/linux-<arch>), replaced whole, plus
 * DIR.inputs, a hash of every input; `--if-changed` skips the build when that hash still matches.
 * QuickJS's object files and the host qjsc are cached in node_modules/.cache/drainguard-toolchain.
 * `--libc glibc` (static glibc) exists only to reproduce the measurement that chose musl;
 * ENVOY_SHUTDOWN_KEEP_SYMBOLS=1 skips stripping, for profiling (perf) only.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build, version as esbuildVersion } from 'esbuild';
import { CACHE, compilerFor, hostArch, launcherFor, missing, muslSpecs, parseArch, QUICKJS, ROOT } from './toolchain.mjs';

const EXECUTABLE = 'envoy-shutdown';
const SOURCES = join(ROOT, 'src/shutdown');
/** -O2 as QuickJS's own release builds; sections so that the linker drops what nothing calls. */
const CFLAGS = ['-O2', '-D_GNU_SOURCE', `-DCONFIG_VERSION="${QUICKJS.version}"`, '-ffunction-sections', '-fdata-sections', '-Wno-array-bounds'];
const QUICKJS_UNITS = ['quickjs', 'libregexp', 'libunicode', 'cutils'];
/** ELF e_machine of each architecture. */
const MACHINE = { amd64: 62, arm64: 183 };

const { values } = parseArgs({
  options: {
    arch: { type: 'string', default: hostArch() },
    out: { type: 'string' },
    'if-changed': { type: 'boolean', default: false },
    libc: { type: 'string', default: 'musl' },
  },
});
const arch = parseArch(values.arch);
if (values.libc !== 'musl' && values.libc !== 'glibc') throw new Error('--libc must be musl or glibc');
const outDir = resolve(values.out ?? join(ROOT, 'dist/envoy-shutdown', `linux-${arch}`));
const stamp = `${outDir}.inputs`;

function log(line) {
  process.stderr.write(`build:shutdown ${arch}: ${line}\n`);
}

function run(file, args, options = {}) {
  execFileSync(file, args, { stdio: ['ignore', 'ignore', 'inherit'], ...options });
}

/** Runs compiler jobs two at a time (the machines this builds on have two cores). */
async function parallel(jobs) {
  const queue = [...jobs];
  const worker = async () => {
    for (let job = queue.shift(); job; job = queue.shift()) {
      await new Promise((done, fail) => {
        const child = spawn(job[0], job.slice(1), { stdio: ['ignore', 'inherit', 'inherit'] });
        child.on('error', fail);
        child.on('exit', (code) => (code === 0 ? done() : fail(new Error(`${job.join(' ')} exited ${code}`))));
      });
    }
  };
  await Promise.all([worker(), worker()]);
}

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

function hashOf(parts) {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(`${part.length}:`).update(part);
  return hash.digest('hex');
}

/** The target compiler, with musl's specs unless building the glibc comparison. */
function targetCompiler() {
  const cc = compilerFor(arch);
  return values.libc === 'musl' ? [cc, '-specs', muslSpecs(arch)] : [cc];
}

function compilerIdentity(cc) {
  return execFileSync(cc, ['--version'], { encoding: 'utf8' }).split('\n')[0];
}

/** Everything the executable is made of: a change to any of these rebuilds it. */
function inputsHash() {
  const sources = filesUnder(SOURCES)
    .filter((file) => /\.(ts|c|mjs)$/.test(file))
    .sort()
    .map((file) => `${relative(ROOT, file)}\n${readFileSync(file, 'utf8')}`);
  return hashOf([
    ...sources,
    // The modules outside src/shutdown the program imports (test/unit/shutdown checks there are no others).
    readFileSync(join(ROOT, 'src/version.ts'), 'utf8'),
    // The contract is a folder of files (src/drain-contract/index.ts and the concerns it exports).
    ...filesUnder(join(ROOT, 'src/drain-contract')).sort().map((file) => `${relative(ROOT, file)}\n${readFileSync(file, 'utf8')}`),
    readFileSync(join(ROOT, 'src/drain-record.ts'), 'utf8'),
    `esbuild ${esbuildVersion}`,
    QUICKJS.integrity,
    values.libc,
    compilerIdentity(compilerFor(arch)),
    ...CFLAGS,
  ]);
}

async function bundle(work) {
  const outfile = join(work, 'bundle.js');
  await build({
    entryPoints: [join(SOURCES, 'entry.ts')],
    bundle: true,
    // Neutral: a Node module imported anywhere in the program fails the build instead of the run.
    platform: 'neutral',
    format: 'iife',
    // QuickJS 2021-03-27 implements ES2020.
    target: 'es2020',
    outfile,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [
      {
        name: 'quickjs-platform',
        setup(builder) {
          builder.onResolve({ filter: /\/platform\/current$/ }, (args) => ({ path: resolve(args.resolveDir, `${args.path}.quickjs.ts`) }));
        },
      },
    ],
  });
  return outfile;
}

/** qjsc for this build host, built once per QuickJS source and flags. */
function hostQjsc() {
  const dir = join(CACHE, `qjsc-${hashOf([QUICKJS.integrity, compilerIdentity('gcc'), ...CFLAGS]).slice(0, 16)}`);
  const qjsc = join(dir, 'qjsc');
  if (existsSync(qjsc)) return qjsc;
  log('building qjsc for the build host');
  mkdirSync(dir, { recursive: true });
  const units = ['qjsc', ...QUICKJS_UNITS, 'quickjs-libc'].map((unit) => join(QUICKJS.dir, `${unit}.c`));
  run('gcc', [...CFLAGS, '-o', `${qjsc}.tmp`, ...units, '-lm', '-ldl', '-lpthread']);
  renameSync(`${qjsc}.tmp`, qjsc);
  return qjsc;
}

/** QuickJS compiled for the target, once per compiler, libc and flags. */
async function quickJsObjects() {
  const cc = targetCompiler();
  const dir = join(CACHE, `quickjs-${arch}-${values.libc}-${hashOf([QUICKJS.integrity, compilerIdentity(cc[0]), ...cc, ...CFLAGS]).slice(0, 16)}`);
  const objects = QUICKJS_UNITS.map((unit) => join(dir, `${unit}.o`));
  if (objects.every((o) => existsSync(o))) return objects;
  log('compiling QuickJS (once per toolchain; cached)');
  const staging = `${dir}.staging`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  await parallel(QUICKJS_UNITS.map((unit) => [...cc, ...CFLAGS, '-c', join(QUICKJS.dir, `${unit}.c`), '-o', join(staging, `${unit}.o`)]));
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return objects;
}

/** Checks the ELF header and program headers: target machine, no interpreter, no dynamic section. */
function checkStatic(file) {
  const elf = readFileSync(file);
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2 || elf[5] !== 1) throw new Error(`${file} is not a 64-bit little-endian ELF`);
  const machine = elf.readUInt16LE(0x12);
  if (machine !== MACHINE[arch]) throw new Error(`${file} is for ELF machine ${machine}, not ${arch}`);
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) {
    const type = elf.readUInt32LE(phoff + i * phentsize);
    if (type === 3) throw new Error(`${file} has a program interpreter: it is not static`);
    if (type === 2) throw new Error(`${file} has a dynamic section: it is not static`);
  }
}

const missingPieces = missing([arch], false).filter((gap) => values.libc === 'musl' || !gap.startsWith('musl-dev'));
if (missingPieces.length > 0) {
  throw new Error(`the envoy-shutdown toolchain is incomplete:\n  ${missingPieces.join('\n  ')}\nInstall it with: npm run toolchain:shutdown   (as root; see docs/envoy-shutdown.md)`);
}

const hash = inputsHash();
if (values['if-changed'] && existsSync(join(outDir, EXECUTABLE)) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === hash) {
  log(`up to date (${relative(ROOT, join(outDir, EXECUTABLE))})`);
  process.exit(0);
}

const work = `${outDir}.work`;
const staging = `${outDir}.staging`;
for (const dir of [work, staging]) rmSync(dir, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
mkdirSync(staging, { recursive: true });
try {
  const bundleFile = await bundle(work);
  const bytecode = join(work, 'bytecode.c');
  run(hostQjsc(), ['-c', '-N', 'envoy_shutdown_bytecode', '-o', bytecode, bundleFile]);
  const quickjs = await quickJsObjects();
  const cc = targetCompiler();
  const target = join(staging, EXECUTABLE);
  await parallel([
    [...cc, ...CFLAGS, '-Wall', '-Wextra', '-Wno-unused-parameter', '-Wno-cast-function-type', '-I', QUICKJS.dir, '-c', join(SOURCES, 'runtime/host.c'), '-o', join(work, 'host.o')],
    [...cc, ...CFLAGS, '-c', bytecode, '-o', join(work, 'bytecode.o')],
  ]);
  run(cc[0], [...cc.slice(1), '-static', '-Wl,--gc-sections', ...(process.env.ENVOY_SHUTDOWN_KEEP_SYMBOLS ? [] : ['-s']), '-o', target, join(work, 'host.o'), join(work, 'bytecode.o'), ...quickjs, '-lm']);
  chmodSync(target, 0o755);
  checkStatic(target);
  const [launcher, ...launcherArgs] = [...launcherFor(arch), target];
  if (spawnSync('sh', ['-c', `command -v ${launcher}`], { stdio: 'ignore' }).status === 0) {
    const printed = execFileSync(launcher, [...launcherArgs, 'version'], { encoding: 'utf8' });
    if (!/^envoy-shutdown \d+\.\d+\.\d+\n$/.test(printed)) throw new Error(`the built program printed ${JSON.stringify(printed)} for \`version\``);
  } else {
    // A cross build without the emulator (an image build): the tests run it under qemu elsewhere.
    log(`not run here: ${launcher} is not installed (only the tests need it)`);
  }
  rmSync(outDir, { recursive: true, force: true });
  renameSync(staging, outDir);
  writeFileSync(stamp, `${hash}\n`);
  log(`built ${relative(ROOT, join(outDir, EXECUTABLE))} (${(statSync(join(outDir, EXECUTABLE)).size / 1e6).toFixed(2)} MB, static, ${values.libc})`);
} finally {
  rmSync(work, { recursive: true, force: true });
  rmSync(staging, { recursive: true, force: true });
}
