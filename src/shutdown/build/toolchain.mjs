#!/usr/bin/env node
/**
 * The toolchain of the static envoy-shutdown executables (docs/envoy-shutdown.md, "Building"): every
 * piece named, pinned and checked here, installed by this script and nothing else.
 *
 *   node src/shutdown/build/toolchain.mjs install [--for build|test] [--arch amd64|arm64]…
 *       Debian packages that are missing (apt-get, as root), then the pinned sources below.
 *   node src/shutdown/build/toolchain.mjs check [--for build|test] [--arch …]
 *       Says what is missing; exit 1 if anything is.
 *
 * Pieces:
 *   - QuickJS 2021-03-27, the C sources vendored by the npm package `qjsc@0.3.0`, fetched with
 *     `npm pack` and accepted only with the pinned sha512 integrity. The copy equals the upstream
 *     release except for MSVC portability edits that change nothing gcc compiles.
 *   - musl 1.2.3 (Debian 12's `musl-dev`, version pinned, .deb sha256 pinned) for each target
 *     architecture, downloaded with apt-get into a private cache (no foreign architecture is added to
 *     dpkg) and unpacked there: static executables with no libc needed at run time, on both arches.
 *   - Debian packages: gcc and libc6-dev (host compiler: qjsc, and the amd64 target on an x86-64 host),
 *     the cross compiler for the other architecture, and for the tests qemu-user-static and the arm64
 *     glibc (libc6-arm64-cross, for the glibc-only arm64 root).
 *
 * Uses only Node's standard library (runs on the system Node before `npm ci`, too).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { arch as nodeArch } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const CACHE = join(ROOT, 'node_modules/.cache/drainguard-toolchain');

export const QUICKJS = {
  version: '2021-03-27',
  npmPackage: 'qjsc@0.3.0',
  integrity: 'sha512-a7+cU6/IVcZbIejffdt/wZVMX6LL2MDL3HQ9Zb5Gm23G9DvBMS/z9GHFxz39bAvp2PvMOM+ypSOAyokt2DdZ2w==',
  /** Where the sources sit inside the npm tarball. */
  tarballDir: 'package/deps/quickjs_2021_03_27',
  dir: join(CACHE, 'quickjs-2021-03-27'),
};

/** Per target architecture: Debian and GNU names, qemu's, and the pinned musl-dev package. */
export const ARCHES = {
  amd64: {
    gnu: 'x86_64-linux-gnu',
    musl: 'x86_64-linux-musl',
    qemu: 'x86_64',
    crossPackage: 'gcc-x86-64-linux-gnu',
    muslDev: { version: '1.2.3-1', sha256: '7c34f29a0c1aa12f6da1d25ed6de6fe6bbd9e048ee76b3dcb88c5e51fb65507f' },
  },
  arm64: {
    gnu: 'aarch64-linux-gnu',
    musl: 'aarch64-linux-musl',
    qemu: 'aarch64',
    crossPackage: 'gcc-aarch64-linux-gnu',
    muslDev: { version: '1.2.3-1', sha256: '55c2ca4bc3041c8ed8ac7dc3ef6080d9551a21650568b2fd7610b59eaf98a4f4' },
  },
};

export function hostArch() {
  const name = { x64: 'amd64', arm64: 'arm64' }[nodeArch()];
  if (!name) throw new Error(`unsupported build host architecture ${nodeArch()} (amd64 and arm64 are supported)`);
  return name;
}

export function parseArch(text) {
  if (!(text in ARCHES)) throw new Error(`--arch must be one of ${Object.keys(ARCHES).join(', ')}, not ${JSON.stringify(text)}`);
  return text;
}

/** The C compiler that targets `arch` from this host: gcc itself, or Debian's cross gcc. */
export function compilerFor(arch) {
  return arch === hostArch() ? 'gcc' : `${ARCHES[arch].gnu}-gcc`;
}

/** How to run an executable built for `arch` here: directly, or under Debian's qemu-user-static. */
export function launcherFor(arch) {
  return arch === hostArch() ? [] : [`qemu-${ARCHES[arch].qemu}-static`];
}

/** Debian packages needed to build for `arches` (and, `forTests`, to run the tests on both). */
export function debianPackages(arches, forTests) {
  const packages = new Set(['gcc', 'libc6-dev', 'ca-certificates']);
  for (const arch of arches) if (arch !== hostArch()) packages.add(ARCHES[arch].crossPackage);
  if (forTests) {
    packages.add('qemu-user-static');
    packages.add('libc6-arm64-cross'); // the arm64 glibc-only test root
    packages.add('binutils'); // readelf: the tests check the executables are static
  }
  return [...packages].sort();
}

function isInstalled(pkg) {
  const result = spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.includes('install ok installed');
}

function sha256(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function sha512Integrity(file) {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
}

/** Replaces `dir` with what `fill(staging)` writes, so a failed fetch never leaves half a directory. */
function materialise(dir, fill) {
  const staging = `${dir}.staging`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    fill(staging);
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

export function quickJsReady() {
  return existsSync(join(QUICKJS.dir, 'quickjs.c')) && existsSync(join(QUICKJS.dir, 'qjsc.c'));
}

/** `npm pack qjsc@0.3.0`, integrity-checked, unpacked to QUICKJS.dir (only the QuickJS sources). */
export function fetchQuickJs(log = console.error) {
  if (quickJsReady()) return;
  log(`toolchain: fetching QuickJS ${QUICKJS.version} sources (${QUICKJS.npmPackage})`);
  materialise(QUICKJS.dir, (staging) => {
    const download = join(staging, 'download');
    mkdirSync(download);
    const name = execFileSync('npm', ['pack', QUICKJS.npmPackage, '--pack-destination', download, '--silent'], { encoding: 'utf8' }).trim().split('\n').pop();
    const tarball = join(download, name);
    const integrity = sha512Integrity(tarball);
    if (integrity !== QUICKJS.integrity) throw new Error(`${QUICKJS.npmPackage}: integrity ${integrity} is not the pinned ${QUICKJS.integrity}`);
    execFileSync('tar', ['-xzf', tarball, '-C', staging, '--strip-components', String(QUICKJS.tarballDir.split('/').length), QUICKJS.tarballDir]);
    rmSync(download, { recursive: true });
    const version = readFileSync(join(staging, 'VERSION'), 'utf8').trim();
    if (version !== QUICKJS.version) throw new Error(`QuickJS sources say ${version}, expected ${QUICKJS.version}`);
  });
}

export function muslDir(arch) {
  return join(CACHE, `musl-${ARCHES[arch].muslDev.version}-${arch}`);
}

/** gcc's specs for linking against the unpacked musl of `arch` (Debian's musl-gcc.specs, relocated). */
export function muslSpecs(arch) {
  return join(muslDir(arch), 'musl-gcc.specs');
}

export function muslReady(arch) {
  return existsSync(muslSpecs(arch));
}

/**
 * Debian 12's musl-dev for `arch`: `apt-get download` with a private package list (so no foreign
 * architecture is added to the system), sha256-checked, unpacked with dpkg-deb.
 */
export function fetchMusl(arch, log = console.error) {
  if (muslReady(arch)) return;
  const { version, sha256: pinned } = ARCHES[arch].muslDev;
  log(`toolchain: fetching musl-dev ${version} for ${arch}`);
  materialise(muslDir(arch), (staging) => {
    const apt = join(staging, 'apt');
    for (const dir of ['lists/partial', 'archives/partial']) mkdirSync(join(apt, dir), { recursive: true });
    const options = [
      '-o', `APT::Architecture=${arch}`,
      '-o', `APT::Architectures::=${arch}`,
      '-o', `Dir::State::Lists=${join(apt, 'lists')}`,
      '-o', `Dir::Cache::Archives=${join(apt, 'archives')}`,
      '-o', 'Debug::NoLocking=1',
      '-o', 'APT::Sandbox::User=root',
      '-qq',
    ];
    execFileSync('apt-get', [...options, 'update'], { stdio: ['ignore', 'ignore', 'inherit'] });
    execFileSync('apt-get', [...options, 'download', `musl-dev:${arch}=${version}`], { cwd: apt, stdio: ['ignore', 'ignore', 'inherit'] });
    const deb = join(apt, readdirSync(apt).find((f) => f.endsWith('.deb')));
    const actual = sha256(deb);
    if (actual !== pinned) throw new Error(`musl-dev ${version} ${arch}: sha256 ${actual} is not the pinned ${pinned}`);
    execFileSync('dpkg-deb', ['-x', deb, join(staging, 'root')]);
    rmSync(apt, { recursive: true });
    const prefix = (dir) => join(muslDir(arch), 'root/usr', dir, ARCHES[arch].musl);
    const specs = readFileSync(join(staging, 'root/usr/lib', ARCHES[arch].musl, 'musl-gcc.specs'), 'utf8')
      .replaceAll(`/usr/include/${ARCHES[arch].musl}`, prefix('include'))
      .replaceAll(`/usr/lib/${ARCHES[arch].musl}`, prefix('lib'));
    writeFileSync(join(staging, 'musl-gcc.specs'), specs);
  });
}

/** What is missing for building (and testing) `arches`; empty when everything is there. */
export function missing(arches, forTests) {
  const gaps = debianPackages(arches, forTests).filter((pkg) => !isInstalled(pkg)).map((pkg) => `Debian package ${pkg}`);
  if (!quickJsReady()) gaps.push(`QuickJS ${QUICKJS.version} sources (${QUICKJS.npmPackage})`);
  for (const arch of arches) if (!muslReady(arch)) gaps.push(`musl-dev ${ARCHES[arch].muslDev.version} for ${arch}`);
  return gaps;
}

export function install(arches, forTests, log = console.error) {
  const packages = debianPackages(arches, forTests).filter((pkg) => !isInstalled(pkg));
  if (packages.length > 0) {
    log(`toolchain: apt-get install ${packages.join(' ')}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { stdio: 'inherit', env });
  }
  fetchQuickJs(log);
  for (const arch of arches) fetchMusl(arch, log);
}

function main(argv) {
  const [command, ...rest] = argv;
  let forTests = true;
  const arches = [];
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '--for') forTests = ({ build: false, test: true })[rest[++i]] ?? (() => { throw new Error('--for takes build or test'); })();
    else if (rest[i] === '--arch') arches.push(parseArch(rest[++i]));
    else throw new Error(`unknown argument ${rest[i]}`);
  }
  if (arches.length === 0) arches.push(...Object.keys(ARCHES));
  if (command === 'install') {
    install(arches, forTests);
    return 0;
  }
  if (command === 'check') {
    const gaps = missing(arches, forTests);
    for (const gap of gaps) console.error(`missing: ${gap}`);
    return gaps.length === 0 ? 0 : 1;
  }
  console.error('usage: toolchain.mjs install|check [--for build|test] [--arch amd64|arm64]…');
  return 2;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
