/**
 * The `drainguard` CLI as single executables: Node's single executable applications (SEA) of the
 * project's pinned Node 24, one per architecture (docs/development.md, "Release").
 *
 * 1. esbuild bundles release/sea-main.ts (the CLI, src/cli/main.ts) and everything it imports into one
 *    CommonJS file. A Node 24 SEA runs a CommonJS main only (its configuration has no `mainFormat`; the
 *    ESM entry came in a later Node), and its `require` reaches Node's built-in modules only, so nothing
 *    may stay outside the bundle: @kubernetes/client-node, which is ESM, is loaded with `import()` by
 *    src/certs/kube.ts, and esbuild turns that into a lazily initialised module of the same bundle.
 *    Whitespace and syntax are minified, names kept: a bug report's stack trace still names functions.
 * 2. The blob: `node --experimental-sea-config` of that architecture's own Node (under qemu-user for the
 *    other architecture) with `useCodeCache`, which roughly halves the CPU time `version` takes. V8's
 *    code cache is specific to the architecture: an arm64 executable with an amd64-made cache starts with
 *    "Warning: Code cache data rejected." (tried), so each blob is made by its own Node. Without the code
 *    cache the two blobs are byte-identical. `useSnapshot` is not used: it needs a main written as a
 *    snapshot builder. `execArgvExtension: none`: a user's NODE_OPTIONS, meant for their own Node
 *    programs, does not reach this one.
 * 3. postject (Node's injector, as the SEA docs use it) writes the blob into a copy of the stripped Node
 *    binary as the NODE_SEA_BLOB note and flips the SEA fuse. Node 24 has no `--build-sea` (Node 25.5).
 * 4. Checked: an ELF for the architecture, the fuse flipped, and `version --client` prints the version and
 *    nothing on stderr, run natively or under qemu-user.
 *
 * Each executable is rebuilt only when a hash of its inputs (the bundle's bytes, the Node package's
 * integrity, the build settings) differs from the one recorded beside the cache.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { build, version as esbuildVersion, type Metafile } from 'esbuild';
import { NODE_BUNDLE_OPTIONS } from '../src/kube-api/vendor-bundle';
import { VERSION } from '../src/version';
import { NODE, REPO_ROOT } from '../test/support/repo';
import { CACHE, launcherFor, PLATFORMS, type PinnedNode, type ReleaseArch } from './pinned-node';

/** Node's SEA fuse (single-executable-applications.md): `:0` in a plain Node, `:1` once a blob is injected. */
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const SEA_RESOURCE = 'NODE_SEA_BLOB';

/** The SEA configuration, less the paths (part of the inputs hash). */
const SEA_SETTINGS = { disableExperimentalSEAWarning: true, useCodeCache: true, useSnapshot: false, execArgvExtension: 'none' } as const;

export interface CliBundle {
  file: string;
  /** sha256 of the bundle's bytes. */
  hash: string;
  /** The npm packages in it (their directories under node_modules), for the licence notices. */
  packageDirs: string[];
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The directory of each npm package an input of the bundle comes from. */
function packageDirsOf(metafile: Metafile): string[] {
  const dirs = new Set<string>();
  for (const input of Object.keys(metafile.inputs)) {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match) dirs.add(join(REPO_ROOT, match[1]!));
  }
  return [...dirs].sort();
}

const BUNDLE_OPTIONS = {
  ...NODE_BUNDLE_OPTIONS,
  entryPoints: [join(REPO_ROOT, 'release/sea-main.ts')],
  absWorkingDir: REPO_ROOT,
  // The licences travel as THIRD-PARTY-NOTICES.txt beside the executable (release/notices.ts).
  legalComments: 'none',
} as const;

interface BundleStamp {
  settings: string;
  /** Every input file of the last bundle (relative to the repository) and its sha256. */
  inputs: Record<string, string>;
  packageDirs: string[];
}

const bundleSettings = () => JSON.stringify({ esbuild: esbuildVersion, options: BUNDLE_OPTIONS });

/** The last bundle, when none of the files it was made of changed (a new import changes an importing file). */
function currentBundle(file: string, stampFile: string): CliBundle | undefined {
  if (!existsSync(file) || !existsSync(stampFile)) return undefined;
  const stamp = JSON.parse(readFileSync(stampFile, 'utf8')) as BundleStamp;
  if (stamp.settings !== bundleSettings()) return undefined;
  for (const [input, hash] of Object.entries(stamp.inputs)) {
    const path = join(REPO_ROOT, input);
    if (!existsSync(path) || sha256(readFileSync(path)) !== hash) return undefined;
  }
  return { file, hash: sha256(readFileSync(file)), packageDirs: stamp.packageDirs };
}

/**
 * Bundles the CLI into CACHE/cli-bundle.cjs; with `ifChanged`, keeps the last bundle while every file it
 * was made of is unchanged (hashing them costs far less than esbuild's run).
 */
export async function bundleCli(ifChanged: boolean): Promise<CliBundle> {
  const file = join(CACHE, 'cli-bundle.cjs');
  const stampFile = `${file}.inputs`;
  const current = ifChanged ? currentBundle(file, stampFile) : undefined;
  if (current) return current;
  mkdirSync(CACHE, { recursive: true });
  const result = await build({ ...BUNDLE_OPTIONS, entryPoints: [...BUNDLE_OPTIONS.entryPoints], outfile: file, metafile: true, logLevel: 'silent' });
  // A require or import esbuild cannot resolve at build time would fail only when that code runs.
  if (result.warnings.length > 0) {
    throw new Error(`esbuild warned while bundling the CLI:\n${result.warnings.map((w) => `${w.location?.file ?? ''}: ${w.text}`).join('\n')}`);
  }
  const inputs = Object.fromEntries(Object.keys(result.metafile.inputs).map((input) => [input, sha256(readFileSync(join(REPO_ROOT, input)))]));
  const stamp: BundleStamp = { settings: bundleSettings(), inputs, packageDirs: packageDirsOf(result.metafile) };
  writeFileSync(stampFile, JSON.stringify(stamp));
  return { file, hash: sha256(readFileSync(file)), packageDirs: stamp.packageDirs };
}

function postjectVersion(): string {
  return (JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules/postject/package.json'), 'utf8')) as { version: string }).version;
}

/** Runs a program, returning its output; on failure the error carries what it printed. */
function run(command: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): { stdout: string; stderr: string } {
  const [file, ...args] = command;
  const result = spawnSync(file!, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options, env: { ...process.env, ...options.env } });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${command.join(' ')} exited ${result.status ?? result.signal}:\n${result.stdout}${result.stderr}`);
  return { stdout: result.stdout, stderr: result.stderr };
}

function countOf(haystack: Buffer, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) count += 1;
  return count;
}

/** What the built file must be: an ELF for `arch`, with the fuse flipped once and no unflipped one. */
export function checkExecutable(file: string, arch: ReleaseArch): void {
  const elf = readFileSync(file);
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2 || elf[5] !== 1) throw new Error(`${file} is not a 64-bit little-endian ELF`);
  const machine = elf.readUInt16LE(0x12);
  if (machine !== PLATFORMS[arch].elfMachine) throw new Error(`${file} is for ELF machine ${machine}, not ${arch}`);
  if (countOf(elf, `${SEA_FUSE}:1`) !== 1 || countOf(elf, `${SEA_FUSE}:0`) !== 0) throw new Error(`${file}: the SEA fuse is not flipped exactly once`);
}

/** The executable for `arch` at `target`, rebuilt only when its inputs changed. Returns whether it was built. */
export function buildCliExecutable(options: { arch: ReleaseArch; bundle: CliBundle; node: PinnedNode; target: string; log: (line: string) => void }): boolean {
  const { arch, bundle, node, target, log } = options;
  const inputs = sha256(
    JSON.stringify({ arch, bundle: bundle.hash, node: node.integrity, postject: postjectVersion(), esbuild: esbuildVersion, sea: SEA_SETTINGS }),
  );
  const stamp = join(CACHE, 'stamps', `${sha256(target).slice(0, 16)}.inputs`);
  if (existsSync(target) && existsSync(stamp) && readFileSync(stamp, 'utf8') === inputs) {
    log(`${relative(REPO_ROOT, target)}: up to date`);
    return false;
  }

  const work = join(CACHE, `sea-${arch}.work`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const launcher = launcherFor(arch);
    const blob = join(work, 'sea.blob');
    writeFileSync(join(work, 'sea-config.json'), JSON.stringify({ main: bundle.file, output: blob, ...SEA_SETTINGS }));
    log(`${arch}: SEA blob (node --experimental-sea-config${launcher.command.length > 0 ? `, under ${launcher.command[0]}` : ''})`);
    run([...launcher.command, node.binary, '--experimental-sea-config', join(work, 'sea-config.json')], { cwd: work, env: launcher.env });

    const executable = join(work, 'drainguard');
    copyFileSync(node.binary, executable);
    if (countOf(readFileSync(executable), `${SEA_FUSE}:0`) !== 1) throw new Error(`${node.binary} does not hold Node's SEA fuse ${SEA_FUSE}:0 once`);
    log(`${arch}: postject ${SEA_RESOURCE} into node ${node.version}`);
    run([NODE, join(REPO_ROOT, 'node_modules/postject/dist/cli.js'), executable, SEA_RESOURCE, blob, '--sentinel-fuse', SEA_FUSE]);
    chmodSync(executable, 0o755);
    checkExecutable(executable, arch);

    const printed = run([...launcher.command, executable, 'version', '--client'], { env: launcher.env });
    if (printed.stdout !== `drainguard ${VERSION}\n` || printed.stderr !== '') {
      throw new Error(`the built ${arch} executable printed ${JSON.stringify(printed)} for \`version\``);
    }
    mkdirSync(dirname(target), { recursive: true });
    renameSync(executable, target);
    mkdirSync(dirname(stamp), { recursive: true });
    writeFileSync(stamp, inputs);
    return true;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
