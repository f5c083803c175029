/**
 * `npm run release [-- --out DIR] [--if-changed]`: every artifact of a drainguard release, in one folder
 * (default dist/release), ready to upload as the GitHub release `v<version>` and to `helm push`
 * (docs/development.md, "Release"):
 *
 *   drainguard-linux-amd64, drainguard-linux-arm64   the CLI as single executables (no Node needed; glibc)
 *   drainguard-linux-<arch>.tar.gz                   each: drainguard and THIRD-PARTY-NOTICES.txt (krew's archives)
 *   THIRD-PARTY-NOTICES.txt                          the licences of Node and of every bundled npm package
 *   drainguard-<chart version>.tgz                   `helm package charts/drainguard` (after `helm lint --strict`)
 *   drainguard.yaml                                  the krew plugin manifest, pointing at the release's archives
 *   SHA256SUMS                                       `sha256sum --check` format, for every file above
 *
 * `--if-changed` rebuilds an executable or archive only when its inputs changed (what the tests use);
 * without it everything is built anew. Archives are reproducible: sorted, owner 0, mtime from
 * SOURCE_DATE_EPOCH or the last commit, gzip without a name or time.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { VERSION } from '../src/version';
import { CHART_DIR, helm } from '../test/support/helm';
import { REPO_ROOT } from '../test/support/repo';
import { buildCliExecutable, bundleCli } from './cli-executable';
import { krewManifest } from './krew';
import { thirdPartyNotices } from './notices';
import { CACHE, hostArch, pinnedNode, RELEASE_ARCHES, type ReleaseArch } from './pinned-node';

export const DEFAULT_RELEASE_DIR = join(REPO_ROOT, 'dist/release');
/** Where the chart is pushed: `helm install drainguard oci://ghcr.io/drainguard/charts/drainguard`. */
export const CHART_OCI_REPOSITORY = 'oci://ghcr.io/drainguard/charts';

export const NOTICES = 'THIRD-PARTY-NOTICES.txt';
export const CHECKSUMS = 'SHA256SUMS';
export const KREW_MANIFEST = 'drainguard.yaml';
/** The executable's name inside an archive, and so the name krew links as kubectl-drainguard. */
export const ARCHIVED_EXECUTABLE = 'drainguard';

export const executableName = (arch: ReleaseArch) => `drainguard-linux-${arch}`;
export const archiveName = (arch: ReleaseArch) => `drainguard-linux-${arch}.tar.gz`;

interface ChartYaml {
  name: string;
  version: string;
  home: string;
}
export function chartMetadata(): ChartYaml {
  return parse(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as ChartYaml;
}
export const chartPackageName = () => `${chartMetadata().name}-${chartMetadata().version}.tgz`;

/** Where the GitHub release `v<version>` serves its files (Chart.yaml `home` is the repository). */
export function downloadBase(version: string = VERSION): string {
  return `${chartMetadata().home}/releases/download/v${version}`;
}

/** Every file of the release folder, in the order SHA256SUMS lists them. */
export function releaseFiles(): string[] {
  return [...RELEASE_ARCHES.flatMap((arch) => [executableName(arch), archiveName(arch)]), NOTICES, chartPackageName(), KREW_MANIFEST, CHECKSUMS].sort();
}

export interface ReleaseOptions {
  out?: string;
  ifChanged?: boolean;
  log?: (line: string) => void;
}

/**
 * SHA-256 of a file, remembered with its size and modification time: an unchanged executable is not
 * read again (hashing the four large files on every `--if-changed` run costs seconds on a busy machine).
 */
const FILE_HASHES = join(CACHE, 'file-hashes.json');
type FileHashes = Record<string, { size: number; mtimeMs: number; sha256: string }>;
let fileHashes: FileHashes | undefined;
function sha256File(file: string): string {
  fileHashes ??= existsSync(FILE_HASHES) ? (JSON.parse(readFileSync(FILE_HASHES, 'utf8')) as FileHashes) : {};
  const { size, mtimeMs } = statSync(file);
  const known = fileHashes[file];
  if (known && known.size === size && known.mtimeMs === mtimeMs) return known.sha256;
  const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
  fileHashes[file] = { size, mtimeMs, sha256 };
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(FILE_HASHES, JSON.stringify(fileHashes));
  return sha256;
}

function run(command: string[], cwd = REPO_ROOT): void {
  const [file, ...args] = command;
  const result = spawnSync(file!, args, { cwd, encoding: 'utf8' });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${command.join(' ')} exited ${result.status ?? result.signal}:\n${result.stdout}${result.stderr}`);
}

/** Seconds since the epoch that every archive entry carries: SOURCE_DATE_EPOCH, else the last commit's time. */
function sourceDateEpoch(): string {
  const given = process.env.SOURCE_DATE_EPOCH;
  if (given !== undefined) {
    if (!/^\d+$/.test(given)) throw new Error(`SOURCE_DATE_EPOCH must be a whole number of seconds, not ${JSON.stringify(given)}`);
    return given;
  }
  const commit = spawnSync('git', ['log', '-1', '--format=%ct'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (commit.status !== 0 || !/^\d+\n$/.test(commit.stdout)) throw new Error('no git commit to date the archives by: set SOURCE_DATE_EPOCH');
  return commit.stdout.trim();
}

/**
 * `name` in `out`, a reproducible .tar.gz of `files` (entry → source and mode; entries in byte order),
 * rebuilt when a source changed.
 */
function buildArchive(out: string, name: string, files: Record<string, { source: string; mode: number }>, ifChanged: boolean): boolean {
  const target = join(out, name);
  const epoch = sourceDateEpoch();
  const entries = Object.keys(files).sort();
  const tarFlags = ['--owner=0', '--group=0', '--numeric-owner', `--mtime=@${epoch}`, '--format=ustar'];
  // -6 (gzip's default): 0.6 % larger than -9 on the executables, in well under half the time.
  const gzipFlags = ['-n', '-6'];
  const inputs = JSON.stringify({ tarFlags, gzipFlags, files: entries.map((entry) => [entry, files[entry]!.mode, sha256File(files[entry]!.source)]) });
  const stamp = join(CACHE, 'stamps', `${createHash('sha256').update(target).digest('hex').slice(0, 16)}.inputs`);
  if (ifChanged && existsSync(target) && existsSync(stamp) && readFileSync(stamp, 'utf8') === inputs) return false;

  const staging = join(CACHE, `${name}.staging`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(join(staging, 'tree'), { recursive: true });
  try {
    for (const [entry, { source, mode }] of Object.entries(files)) {
      copyFileSync(source, join(staging, 'tree', entry));
      chmodSync(join(staging, 'tree', entry), mode);
    }
    const tar = join(staging, 'archive.tar');
    run(['tar', ...tarFlags, '-cf', tar, '-C', join(staging, 'tree'), ...entries]);
    // -n: no file name or time in the gzip header, so the same tree gives the same bytes.
    run(['gzip', ...gzipFlags, tar]);
    renameSync(`${tar}.gz`, target);
    mkdirSync(join(CACHE, 'stamps'), { recursive: true });
    writeFileSync(stamp, inputs);
    return true;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** The release folder: made, or refused when it holds files this script did not make. */
function prepareOut(out: string): void {
  mkdirSync(out, { recursive: true });
  const present = readdirSync(out);
  const ours = new Set(releaseFiles());
  const foreign = present.filter((name) => !ours.has(name));
  if (foreign.length === 0) return;
  // A folder this script made (it has SHA256SUMS) loses the files of an older release; any other is left alone.
  if (!present.includes(CHECKSUMS)) throw new Error(`${out} holds files that are not release artifacts (${foreign.join(', ')}): pick an empty --out`);
  for (const name of foreign) rmSync(join(out, name), { recursive: true, force: true });
}

/** Builds the release folder; returns its path. */
export async function buildRelease(options: ReleaseOptions = {}): Promise<string> {
  const out = resolve(options.out ?? DEFAULT_RELEASE_DIR);
  const started = performance.now();
  const log = options.log ?? ((line: string) => process.stderr.write(`release: ${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s  ${line}\n`));
  const ifChanged = options.ifChanged ?? false;
  hostArch(); // refuses an unsupported build host before any work
  prepareOut(out);
  // SHA256SUMS goes last: until it is written again, the folder does not claim to be a finished release.
  rmSync(join(out, CHECKSUMS), { force: true });

  log('helm lint --strict');
  const lint = helm(['lint', '--strict', CHART_DIR]);
  if (lint.status !== 0) throw new Error(`helm lint --strict ${relative(REPO_ROOT, CHART_DIR)} failed:\n${lint.stdout}${lint.stderr}`);

  log('the CLI bundle (esbuild; with --if-changed, the last one while its inputs are unchanged)');
  const bundle = await bundleCli(ifChanged);
  const nodes = Object.fromEntries(RELEASE_ARCHES.map((arch) => [arch, pinnedNode(arch, log)])) as Record<ReleaseArch, ReturnType<typeof pinnedNode>>;
  const noticesFile = join(out, NOTICES);
  const host = nodes[hostArch()];
  writeFileSync(noticesFile, thirdPartyNotices({ nodeVersion: host.version, nodeLicense: host.license, packageDirs: bundle.packageDirs }));

  for (const arch of RELEASE_ARCHES) {
    const executable = join(out, executableName(arch));
    if (!ifChanged) rmSync(executable, { force: true });
    buildCliExecutable({ arch, bundle, node: nodes[arch], target: executable, log });
    const archive = { [ARCHIVED_EXECUTABLE]: { source: executable, mode: 0o755 }, [NOTICES]: { source: noticesFile, mode: 0o644 } };
    if (buildArchive(out, archiveName(arch), archive, ifChanged)) log(`${archiveName(arch)}: archived`);
  }

  log('helm package');
  const packaged = helm(['package', CHART_DIR, '--destination', out]);
  if (packaged.status !== 0 || !existsSync(join(out, chartPackageName()))) throw new Error(`helm package failed:\n${packaged.stdout}${packaged.stderr}`);

  const base = downloadBase();
  writeFileSync(
    join(out, KREW_MANIFEST),
    krewManifest({
      version: VERSION,
      homepage: chartMetadata().home,
      archives: RELEASE_ARCHES.map((arch) => ({
        arch,
        uri: `${base}/${archiveName(arch)}`,
        sha256: sha256File(join(out, archiveName(arch))),
        files: [ARCHIVED_EXECUTABLE, NOTICES],
      })),
    }),
  );

  log('SHA256SUMS');
  const sums = releaseFiles()
    .filter((name) => name !== CHECKSUMS)
    .map((name) => `${sha256File(join(out, name))}  ${name}\n`)
    .join('');
  writeFileSync(join(out, CHECKSUMS), sums);
  return out;
}

function describe(out: string): string {
  const rows = releaseFiles().map((name) => `  ${(statSync(join(out, name)).size / 1e6).toFixed(1).padStart(7)} MB  ${name}`);
  return (
    `${relative(process.cwd(), out) || '.'}:\n${rows.join('\n')}\n\n` +
    `Publish: upload every file to the GitHub release v${VERSION} (${downloadBase()}/...), then\n` +
    `  helm push ${relative(process.cwd(), join(out, chartPackageName()))} ${CHART_OCI_REPOSITORY}\n`
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { out: { type: 'string' }, 'if-changed': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
  });
  if (values.help) {
    process.stdout.write('Usage: npm run release [-- --out DIR] [--if-changed]\n\nBuilds every release artifact into DIR (default dist/release).\n');
    return;
  }
  const out = await buildRelease({ ...(values.out === undefined ? {} : { out: values.out }), ifChanged: values['if-changed'] });
  process.stdout.write(describe(out));
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`release: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
